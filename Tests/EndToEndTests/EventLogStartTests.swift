import Foundation
import Model
import Observability
import RPC
import Testing
import Wire

@testable import EntitlementService

/// Where the event log starts, and that every change after it has its events whenever the
/// instance's view catches up. Each step is taken by the test in a fixed order (no follower task
/// runs): the lease is taken before the view has a position, then the view is loaded or told
/// the change, as the feed follower would.
@Suite("End to end: the event log starts where the ledger records it")
struct EventLogStartTests {
    /// A view and the publisher it tells, with no follower running.
    struct Parts {
        let view: EntitlementView
        let follower: LedgerFeedFollower
        let publisher: EventPublisher
    }

    static func parts(_ stack: EntitlementStack, owner: String = "instance-a", logOn: Int64? = nil) throws -> Parts {
        let view = EntitlementView()
        let policies = try PolicyStore.load(path: stack.policyPath)
        let logger = Logger(service: owner, sink: .capturing())
        let publisher = EventPublisher(
            client: stack.ledgerClient, view: view, policies: policies, owner: owner, leaseMilliseconds: 60_000,
            logger: logger, logOn: logOn)
        let follower = LedgerFeedFollower(
            view: view, client: stack.ledgerClient, logger: logger, policies: policies, publisher: publisher)
        return Parts(view: view, follower: follower, publisher: publisher)
    }

    /// Expects the log to hold the two events of `account`'s grant at `position`, and no other.
    static func expectOnlyGrant(
        _ stack: EntitlementStack, _ account: String, at position: UInt64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let log = try await EventLogTests.log(stack)
        #expect(log.map(\.type) == ["grant.created", "access.granted"], sourceLocation: sourceLocation)
        #expect(
            log.allSatisfy { $0.accountID == account && $0.position == position }, sourceLocation: sourceLocation)
    }

    /// The commit time of the change at `position`, as the feed gives it.
    static func committed(_ stack: EntitlementStack, _ position: UInt64) async throws -> Int64 {
        var changes = stack.ledgerClient.serverStream(
            LedgerRPC.watchChanges, WatchChangesRequest(after: position - 1)
        ).makeAsyncIterator()
        let change = try Change(serialized: try #require(try await changes.next()))
        #expect(change.position == position)
        return try #require(change.committedTimeMilliseconds)
    }

    static func grant(_ stack: EntitlementStack, _ account: String) async throws -> UInt64 {
        try await stack.ledgerClient.call(
            LedgerRPC.grantEntitlement,
            GrantEntitlementRequest(idempotencyKey: "g-\(account)", accountID: account, capability: "pro")
        ).position
    }

    @Test(
        "a grant made after the lease was taken but before the view had a position gets its events when a snapshot brings it"
    )
    func grantBeforeSnapshot() async throws {
        try await EntitlementStack.with { stack in
            let parts = try Self.parts(stack)
            // The lease is taken with no snapshot loaded yet: the ledger records the start, 0.
            await parts.publisher.renewLease()
            #expect(await !parts.publisher.isComputing)
            let state = try await stack.ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest())
            #expect(state.started && state.throughFeedPosition == 0)
            let position = try await Self.grant(stack, "acct-1")
            // The snapshot holds the grant; the next renewal catches up from the recorded start.
            try await parts.follower.loadSnapshot()
            #expect(parts.view.position == position)
            await parts.publisher.renewLease()
            #expect(await parts.publisher.isComputing)
            #expect(await parts.publisher.flush())
            let log = try await EventLogTests.log(stack)
            #expect(log.map(\.type) == ["grant.created", "access.granted"])
            #expect(log.allSatisfy { $0.accountID == "acct-1" && $0.position == position })
        }
    }

    @Test("the access event a catch-up computes is on the trace that recorded the change, as a followed change's is")
    func catchUpKeepsTrace() async throws {
        try await EntitlementStack.with { stack in
            let parts = try Self.parts(stack)
            await parts.publisher.renewLease()
            let trace = try #require(
                TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
            let position = try await TraceContext.$current.withValue(trace) { try await Self.grant(stack, "acct-1") }
            try await parts.follower.loadSnapshot()
            #expect(parts.view.position == position)
            await parts.publisher.renewLease()
            #expect(await parts.publisher.flush())
            let log = try await EventLogTests.log(stack)
            #expect(log.map(\.type) == ["grant.created", "access.granted"])
            #expect(log.map(\.traceID) == [trace.traceID, trace.traceID])
        }
    }

    @Test("a grant the follower applies before the first catch-up gets its events (the catch-up runs inside its call)")
    func grantBeforeFirstCatchUp() async throws {
        try await EntitlementStack.with { stack in
            let parts = try Self.parts(stack)
            await parts.publisher.renewLease()
            try await parts.follower.loadSnapshot()
            #expect(parts.view.position == 0)
            let position = try await Self.grant(stack, "acct-1")
            // What the follower does with the change: apply it to the view, then tell the publisher.
            var changes = stack.ledgerClient.serverStream(LedgerRPC.watchChanges, WatchChangesRequest(after: 0))
                .makeAsyncIterator()
            let change = try Change(serialized: try #require(try await changes.next()))
            #expect(change.position == position)
            #expect(
                parts.view.apply(
                    position: change.position, subscription: change.subscription,
                    committed: change.committedTimeMilliseconds ?? 0))
            await parts.publisher.observe(change, previousHolder: nil)
            #expect(await parts.publisher.isComputing)
            #expect(await parts.publisher.flush())
            let log = try await EventLogTests.log(stack)
            #expect(log.map(\.type) == ["grant.created", "access.granted"])
            let state = try await stack.ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest())
            #expect(state.throughFeedPosition == position)
        }
    }

    @Test("on a ledger with history the log starts at the newest position when the lease is first taken")
    func startOnHistory() async throws {
        try await EntitlementStack.with { stack in
            let before = try await Self.grant(stack, "acct-old")
            let parts = try Self.parts(stack)
            await parts.publisher.renewLease()
            var state = try await stack.ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest())
            #expect(state.started && state.throughFeedPosition == before && state.startFeedPosition == before)
            let after = try await Self.grant(stack, "acct-new")
            try await parts.follower.loadSnapshot()
            await parts.publisher.renewLease()
            #expect(await parts.publisher.flush())
            try await Self.expectOnlyGrant(stack, "acct-new", at: after)
            // Taken again later, the lease leaves the start where it was.
            await parts.publisher.renewLease()
            state = try await stack.ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest())
            #expect(state.throughFeedPosition == after && state.startFeedPosition == before)
            // subctl events verify checks from where the log began.
            try await stack.expectEventLogComplete()
        }
    }

    @Test("a change committed after the instance turned the log on but before its first lease has its events")
    func changeBeforeFirstLease() async throws {
        try await EntitlementStack.with { stack in
            // The instance turned the log on at the first grant's commit time. Grants committed
            // in that same millisecond are history too; the first one the ledger's clock commits
            // later has its events, and only it.
            let before = try await Self.grant(stack, "acct-old")
            let logOn = try await Self.committed(stack, before)
            var account = ""
            var after: UInt64 = 0
            repeat {
                try #require(after < before + 10_000)
                account = "acct-new-\(after)"
                after = try await Self.grant(stack, account)
            } while try await Self.committed(stack, after) <= logOn
            let parts = try Self.parts(stack, logOn: logOn)
            await parts.publisher.renewLease()
            let state = try await stack.ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest())
            #expect(state.startFeedPosition == after - 1)
            try await parts.follower.loadSnapshot()
            await parts.publisher.renewLease()
            #expect(await parts.publisher.flush())
            try await Self.expectOnlyGrant(stack, account, at: after)
            // A time before any change is refused if negative, and starts nothing twice.
            await #expect(throws: RPCError(.invalidArgument, "log_on_ms -1 is negative")) {
                _ = try await stack.ledgerClient.call(
                    LedgerRPC.acquireLease,
                    AcquireLeaseRequest(name: "events", owner: "other", ttlMilliseconds: 3000, logOnMilliseconds: -1))
            }
        }
    }
}
