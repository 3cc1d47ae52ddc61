import EntitlementService
import Foundation
import Model
import Observability
import RPC
import Synchronization
import TestSupport
import Testing
import Wire

/// The event log computed against a real ledger: two entitlement publishers in this process
/// (each with its own view and feed follower, and a clock the test sets), the ledger a process.
@Suite("End to end: the event log, its lease and the clock")
struct EventLogTests {
    static let day: Int64 = 86_400_000

    final class Clock: Sendable {
        let value = Mutex<Int64>(Int64(Date().timeIntervalSince1970 * 1000))
        var now: Int64 { value.withLock { $0 } }
        func set(_ time: Int64) { value.withLock { $0 = time } }
    }

    /// A view kept by its own follower, and the publisher it tells.
    struct Instance {
        let view: EntitlementView
        let follower: LedgerFeedFollower
        let publisher: EventPublisher
    }

    static func instance(_ stack: EntitlementStack, owner: String, clock: Clock) async throws -> Instance {
        let view = EntitlementView()
        let policies = try PolicyStore.load(path: stack.policyPath)
        let logger = Logger(service: owner, sink: .capturing())
        let publisher = EventPublisher(
            client: stack.ledgerClient, view: view, policies: policies, owner: owner, leaseMilliseconds: 3000,
            logger: logger, now: { clock.now })
        let follower = LedgerFeedFollower(
            view: view, client: stack.ledgerClient, logger: logger, policies: policies, publisher: publisher,
            now: { clock.now })
        try await follower.start()
        return Instance(view: view, follower: follower, publisher: publisher)
    }

    static func log(_ stack: EntitlementStack) async throws -> [Event] {
        try await stack.ledgerClient.call(LedgerRPC.listEvents, ListEventsRequest(limit: 1000)).events
    }

    /// Appends what `instance` computed until the log holds what `expected` wants (at most 60 s).
    static func until(
        _ stack: EntitlementStack, _ instance: Instance, _ what: String, _ expected: ([Event]) -> Bool
    ) async throws -> [Event] {
        let deadline = ContinuousClock.now + .seconds(60)
        var events: [Event] = []
        while ContinuousClock.now < deadline {
            await instance.publisher.flush()
            events = try await log(stack)
            if expected(events) { return events }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the event log never showed \(what): \(events.map(\.type))")
        return events
    }

    @Test(
        "lifecycle and access events in one log; access of a cancelled subscription ends at its expiry with no store fact; a second instance takes over"
    )
    func eventLog() async throws {
        let stack = try await EntitlementStack()
        let clock = Clock()
        let first = try await Self.instance(stack, owner: "instance-a", clock: clock)
        do {
            // The first holder starts the log at the view's position.
            while first.view.position == nil { try await Task.sleep(for: .milliseconds(10)) }
            await first.publisher.renewLease()
            #expect(await first.publisher.isComputing)
            #expect(await first.publisher.flush())
            // A cancelled subscription, paid for ten more days, of acct-1.
            let expires = clock.now + 10 * Self.day
            let key = SubscriptionKey(store: .apple, environment: .production, storeID: "4001")
            let cancelled = Subscription(
                key: key, productID: "com.example.pro.monthly", productKind: .autoRenewable, state: .cancelled,
                ownership: .purchased, purchaseTimeMilliseconds: clock.now - 20 * Self.day,
                expiresTimeMilliseconds: expires, autoRenew: false, storeTimeMilliseconds: clock.now,
                bundleOrPackage: "com.example.app")
            let _: RecordVerifiedStateResponse = try await stack.ledgerClient.call(
                LedgerRPC.recordVerifiedState,
                RecordVerifiedStateRequest(
                    idempotencyKey: "state-4001", subscription: cancelled,
                    events: [LifecycleEvent(key: key, kind: .renewalDisabled, storeTimeMilliseconds: clock.now)]))
            try await stack.link(key, account: "acct-1", tag: "link-4001")
            var events = try await Self.until(stack, first, "the grant of access") {
                $0.contains { $0.type == "access.granted" }
            }
            #expect(events.map(\.type) == ["subscription.renewal_disabled", "subscription.linked", "access.granted"])
            let granted = try #require(events.last)
            #expect(granted.accountID == "acct-1" && granted.capability == "pro")
            #expect(granted.accessUntilMilliseconds == expires && granted.key == key)
            #expect(events.map(\.sequence) == [1, 2, 3])
            // Nothing happens until the end; at the end, access ends by time alone.
            await first.publisher.tick(now: expires - 1)
            #expect(await first.publisher.flush())
            #expect(try await Self.log(stack).count == 3)
            await first.publisher.tick(now: expires)
            events = try await Self.until(stack, first, "the end of access") { $0.count == 4 }
            let ended = try #require(events.last)
            #expect(ended.type == "access.ended" && ended.reason == "expired" && ended.accountID == "acct-1")
            #expect(ended.recordedTimeMilliseconds == expires && ended.position == granted.position)

            // The first instance stops renewing (it died). While nobody holds the lease, a grant.
            let grant: GrantEntitlementResponse = try await stack.ledgerClient.call(
                LedgerRPC.grantEntitlement,
                GrantEntitlementRequest(idempotencyKey: "g-2", accountID: "acct-2", capability: "pro"))
            // The clock back at the ledger's time (the grant starts there).
            clock.set(try #require(grant.grant?.purchaseTimeMilliseconds) + 1000)
            let second = try await Self.instance(stack, owner: "instance-b", clock: clock)
            while second.view.position == nil { try await Task.sleep(for: .milliseconds(10)) }
            // It takes the lease once the first one's has expired (three seconds on the ledger's clock).
            let deadline = ContinuousClock.now + .seconds(10)
            while await !second.publisher.isComputing, ContinuousClock.now < deadline {
                await second.publisher.renewLease()
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(await second.publisher.isComputing)
            events = try await Self.until(stack, second, "the grant after the takeover") {
                $0.contains { $0.type == "access.granted" && $0.accountID == "acct-2" }
            }
            #expect(events.suffix(2).map(\.type) == ["grant.created", "access.granted"])
            #expect(events.last?.key == grant.grant?.key)
            // The first instance finds out at its next renewal and stops.
            await second.publisher.renewLease()
            await first.publisher.renewLease()
            #expect(await !first.publisher.isComputing)
            // Every id once; sequences in order.
            #expect(Set(events.map(\.id)).count == events.count)
            #expect(events.map(\.sequence) == Array(1...UInt64(events.count)))
            await second.follower.shutdown()
        } catch {
            await first.follower.shutdown()
            await stack.stop()
            throw error
        }
        await first.follower.shutdown()
        await stack.stop()
    }
}
