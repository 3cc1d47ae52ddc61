import Foundation
import Model
import Observability
import RPC
import SQLite
import Synchronization
import TestSupport
import Testing
import Wire

@testable import EntitlementService

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

    /// The whole log, a thousand events a page.
    static func log(_ stack: EntitlementStack) async throws -> [Event] {
        var events: [Event] = []
        while true {
            let page = try await stack.ledgerClient.call(
                LedgerRPC.listEvents, ListEventsRequest(afterSequence: events.last?.sequence ?? 0, limit: 1000)
            ).events
            guard !page.isEmpty else { return events }
            events += page
        }
    }

    /// Appends what `instance` computed until the log holds what `expected` wants (at most 60 s).
    static func until(
        _ stack: EntitlementStack, _ instance: Instance, _ what: String, _ expected: ([Event]) -> Bool
    ) async throws -> [Event] {
        let deadline = ContinuousClock.now + .seconds(60)
        var events: [Event] = []
        while ContinuousClock.now < deadline {
            // The lease renewed as the service does: a loaded machine may take longer than it lasts.
            await instance.publisher.renewLease()
            await instance.publisher.flush()
            events = try await log(stack)
            if expected(events) { return events }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the event log never showed \(what): \(events.map(\.type))")
        return events
    }

    /// Records a cancelled App Store subscription `storeID` (renewal turned off, one
    /// `renewal_disabled` event) paid until `expires`, with `periods`.
    @discardableResult
    static func recordCancelled(
        _ stack: EntitlementStack, _ storeID: String, at now: Int64, expires: Int64, periods: [Period] = []
    ) async throws -> RecordVerifiedStateResponse {
        let key = SubscriptionKey(store: .apple, environment: .production, storeID: storeID)
        let cancelled = Subscription(
            key: key, productID: "com.example.pro.monthly", productKind: .autoRenewable, state: .cancelled,
            ownership: .purchased, purchaseTimeMilliseconds: now - 20 * day, expiresTimeMilliseconds: expires,
            autoRenew: false, storeTimeMilliseconds: now, bundleOrPackage: "com.example.app")
        return try await stack.ledgerClient.call(
            LedgerRPC.recordVerifiedState,
            RecordVerifiedStateRequest(
                idempotencyKey: "state-\(storeID)", subscription: cancelled,
                events: [LifecycleEvent(key: key, kind: .renewalDisabled, storeTimeMilliseconds: now)],
                periods: periods))
    }

    /// Waits (at most 60 s) until `instance` has computed `count` events not yet appended.
    static func pending(_ instance: Instance, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while await instance.publisher.pendingCount < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await instance.publisher.pendingCount == count)
    }

    /// Takes the lease for `instance` once its view has a position (the previous holder's lease
    /// expires within three seconds on the ledger's clock); false when it never did.
    static func lead(_ instance: Instance) async throws -> Bool {
        while instance.view.position == nil { try await Task.sleep(for: .milliseconds(10)) }
        let deadline = ContinuousClock.now + .seconds(10)
        while await !instance.publisher.isComputing, ContinuousClock.now < deadline {
            await instance.publisher.renewLease()
            if await instance.publisher.isComputing { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return await instance.publisher.isComputing
    }

    /// Runs `body` with a stack, a clock and a first instance that computes the log (started);
    /// stops them afterwards, whatever happened.
    static func withLeader(_ body: (EntitlementStack, Clock, Instance) async throws -> Void) async throws {
        let stack = try await EntitlementStack()
        let clock = Clock()
        do {
            let first = try await Self.instance(stack, owner: "instance-a", clock: clock)
            do {
                #expect(try await Self.lead(first))
                #expect(await first.publisher.flush())
                try await body(stack, clock, first)
            } catch {
                await first.follower.shutdown()
                throw error
            }
            await first.follower.shutdown()
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("the event log's lag runs from the commit of the oldest change it does not cover yet; 0 once appended")
    func eventLogLag() async throws {
        try await Self.withLeader { stack, clock, first in
            #expect(first.publisher.eventLogLagSeconds(now: clock.now) == 0)
            let recorded = try await Self.recordCancelled(
                stack, "2000000901", at: clock.now, expires: clock.now + 10 * Self.day)
            // The change reaches the view and the publisher; nothing is appended yet.
            #expect(await first.publisher.observed(recorded.position))
            let later = clock.now + 3_600_000
            // Committed on the ledger's clock, a moment after the test's clock was read.
            let lag = first.publisher.eventLogLagSeconds(now: later)
            #expect(lag > 3500 && lag <= 3600)
            #expect(abs(first.publisher.eventLogLagSeconds(now: later + 10_000) - (lag + 10)) < 1e-6)
            #expect(await first.publisher.flush())
            #expect(first.publisher.eventLogLagSeconds(now: later) == 0)
        }
    }

    @Test(
        "a flush that leaves events of a change behind records the feed as covered only to just before that change: the next holder computes the rest, every event once"
    )
    func partialFlushThenTakeover() async throws {
        try await Self.withLeader { stack, clock, first in
            // One change that gives one event, then 600 grants that give two each (grant.created,
            // access.granted): the 1,000th event, where the first append stops, is the first of
            // the 500th grant's two.
            try await Self.recordCancelled(stack, "4101", at: clock.now, expires: clock.now + 29 * Self.day)
            var positions: [UInt64] = []
            var started: Int64 = 0
            for account in 1...600 {
                let grant: GrantEntitlementResponse = try await stack.ledgerClient.call(
                    LedgerRPC.grantEntitlement,
                    GrantEntitlementRequest(
                        idempotencyKey: "g-\(account)", accountID: "acct-\(account)", capability: "pro"))
                positions.append(grant.position)
                started = try #require(grant.grant?.purchaseTimeMilliseconds)
            }
            try await Self.pending(first, 1201)
            // The log takes the first append (1,000 events) and fails every one after it.
            let file = try SQLiteDatabase(path: stack.directory.appendingPathComponent("ledger.sqlite").path)
            try file.execute(
                """
                CREATE TRIGGER log_full BEFORE INSERT ON event_log WHEN (SELECT count(*) FROM event_log) >= 1000
                BEGIN SELECT RAISE(ABORT, 'the event log takes no more'); END
                """)
            // Renewed as the service does, a third of its time: the writes took a while.
            await first.publisher.renewLease()
            #expect(await !first.publisher.flush())
            var log = try await Self.log(stack)
            #expect(log.count == 1000 && log.last?.type == "grant.created" && log.last?.accountID == "acct-500")
            let state = try await stack.ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest())
            #expect(state.throughFeedPosition == positions[499] - 1)
            // The first instance dies with 201 events computed; the log mends; a second takes over.
            await first.follower.shutdown()
            try file.execute("DROP TRIGGER log_full")
            // The clock at the ledger's time, past the last grant's start.
            clock.set(started + 1000)
            let second = try await Self.instance(stack, owner: "instance-b", clock: clock)
            #expect(try await Self.lead(second))
            log = try await Self.until(stack, second, "every event") { $0.count >= 1201 }
            #expect(log.count == 1201)
            #expect(Set(log.map(\.id)).count == log.count)
            // In order; the number the second holder's repeat of an appended event drew is skipped.
            #expect(zip(log, log.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
            for account in 1...600 {
                let events = log.filter { $0.accountID == "acct-\(account)" }.map(\.type)
                #expect(events == ["grant.created", "access.granted"], "acct-\(account)")
            }
            try await stack.expectEventLogComplete()
            await second.follower.shutdown()
        }
    }

    @Test(
        "subctl events verify finds each change's lifecycle events once in the log appended; a row deleted is missing, a copy under another id unexpected, and it exits 3 naming them"
    )
    func verify() async throws {
        try await Self.withLeader { stack, clock, first in
            try await Self.recordCancelled(stack, "4301", at: clock.now, expires: clock.now + 10 * Self.day)
            try await Self.recordCancelled(stack, "4302", at: clock.now, expires: clock.now + 10 * Self.day)
            let key = SubscriptionKey(store: .apple, environment: .production, storeID: "4301")
            let through = try await stack.link(key, account: "acct-1", tag: "link-4301")
            let log = try await Self.until(stack, first, "the link's events") {
                $0.contains { $0.type == "access.granted" }
            }
            #expect(
                log.map(\.type) == [
                    "subscription.renewal_disabled", "subscription.renewal_disabled", "subscription.linked",
                    "access.granted",
                ])
            #expect(
                try await stack.ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest()).throughFeedPosition
                    == through)
            var result = try await stack.verifyEventLog()
            #expect(result.status == 0, "\(result.errors)")
            #expect(
                result.output
                    == "checked 3 changes and 3 lifecycle events after feed position 0 through \(through):"
                    + " nothing missing, doubled or unexpected\n")
            // The second subscription's event deleted; the link's logged again under the next index.
            let lost = log[1]
            var copy = log[2]
            copy.id = FeedEvents.id(position: copy.position, index: 1)
            copy.sequence = 0
            let file = try SQLiteDatabase(path: stack.directory.appendingPathComponent("ledger.sqlite").path)
            #expect(try file.query("DELETE FROM event_log WHERE id = ?1", [.text(lost.id)]).changes == 1)
            let sequence = try #require(
                try file.query(
                    "INSERT INTO event_log (id, type, account_id, feed_position, event) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq",
                    [
                        .text(copy.id), .text(copy.type), .text(copy.accountID ?? ""), .integer(Int64(copy.position)),
                        .blob(copy.serialized()),
                    ]
                ).int64(0, "seq"))
            let missing =
                "missing: position \(lost.position) \(lost.id) (subscription.renewal_disabled) is not in the log"
            let unexpected =
                "unexpected: position \(copy.position) \(copy.id) is logged at #\(sequence) as subscription.linked; the feed gives no such event"
            result = try await stack.verifyEventLog()
            #expect(result.status == 3)
            #expect(
                result.output.split(separator: "\n").map(String.init) == [
                    "checked 3 changes and 3 lifecycle events after feed position 0 through \(through):"
                        + " 1 missing, 0 doubled, 1 unexpected",
                    missing, unexpected,
                ])
            #expect(
                result.errors.contains(
                    "error: INCONSISTENT: the event log does not hold each change's lifecycle events exactly once"
                        + " (positions \(lost.position), \(copy.position))"), "\(result.errors)")
            // After the lost event's position, only the copy is wrong.
            result = try await stack.verifyEventLog(from: lost.position)
            #expect(result.status == 3)
            #expect(
                result.output.split(separator: "\n").map(String.init) == [
                    "checked 1 change and 2 lifecycle events after feed position \(lost.position) through \(through):"
                        + " 0 missing, 0 doubled, 1 unexpected",
                    unexpected,
                ])
        }
    }

    @Test("events of large states are appended in batches that fit a frame: 200 events of 8 KB, all of them")
    func largeEvents() async throws {
        try await Self.withLeader { stack, clock, first in
            // Each a chain of 150 months with a day between them: 150 access periods in its state,
            // which each event carries.
            var size = 0
            for index in 0..<200 {
                let periods = (0..<150).map { (n: Int64) in
                    Period(
                        periodID: "\(5000 + index)-\(n)", productID: "com.example.pro.monthly",
                        startMilliseconds: clock.now - (150 - n) * 31 * Self.day,
                        endMilliseconds: clock.now - (150 - n) * 31 * Self.day + 30 * Self.day,
                        signedTimeMilliseconds: clock.now - (150 - n) * 31 * Self.day, productKind: .autoRenewable)
                }
                let answer = try await Self.recordCancelled(
                    stack, "\(5000 + index)", at: clock.now, expires: clock.now + Self.day, periods: periods)
                size = try #require(answer.subscription).serialized().count
            }
            // Together well past the 1 MiB a frame holds.
            #expect(200 * size > 1_300_000)
            try await Self.pending(first, 200)
            await first.publisher.renewLease()
            #expect(await first.publisher.flush())
            let log = try await Self.log(stack)
            #expect(log.count == 200 && log.allSatisfy { $0.subscription?.periods.count == 150 })
            try await stack.expectEventLogComplete()
        }
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
            try await Self.recordCancelled(stack, "4001", at: clock.now, expires: expires)
            _ = try await stack.link(key, account: "acct-1", tag: "link-4001")
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
            #expect(try await Self.lead(second))
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
            try await stack.expectEventLogComplete()
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
