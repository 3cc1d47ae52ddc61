import Foundation
import Model
import Observability
import RPC
import Testing
import Wire

@testable import LedgerService

/// What an operator's replays leave in the audit trail (an inbox entry replayed, a dead letter
/// delivered again), and the work queue of Google purchases still to acknowledge.
@Suite("Ledger: operators' replays in the audit trail, and purchases awaiting acknowledgement")
struct LedgerAuditTests {
    static let engines = LedgerEngine.available
    static let actor = "support-desk"

    /// The ledger's methods on an in-process transport that calls as `actor`, and their log.
    static func methods(_ ledger: Ledger) throws -> (InProcessTransport, LogSink) {
        let router = RPCRouter()
        let sink = LogSink.capturing()
        LedgerMethods.register(on: router, ledger: ledger, logger: Logger(service: "ledger", sink: sink))
        let transport = InProcessTransport(
            server: try RPCServer(configuration: .init(), router: router),
            caller: RPCCaller(identities: [actor], peer: "in-process"))
        return (transport, sink)
    }

    /// The log lines with message `message`, as their fields (the time, level and service left out).
    static func logged(_ sink: LogSink, _ message: String) throws -> [[String: String]] {
        try sink.captured.compactMap { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
            guard object["msg"] == message else { return nil }
            return object.filter { !["ts", "level", "service", "msg", "trace_id"].contains($0.key) }
        }
    }

    static func google(_ token: String) -> SubscriptionKey {
        SubscriptionKey(store: .google, environment: .production, storeID: token)
    }

    /// Records a Google purchase of `account` in `state`, acknowledged or not.
    static func recordGoogle(
        _ ledger: Ledger, _ token: String, _ state: SubscriptionState, acknowledged: Bool = false, at: Int64,
        account: String? = nil
    ) async throws -> Subscription {
        var subscription = LedgerConformanceTests.state(google(token), state, storeTime: at)
        subscription.acknowledged = acknowledged
        _ = try await ledger.verifiedStates.recordVerifiedState(
            LedgerConformanceTests.record("\(token)-\(at)-\(acknowledged)", subscription))
        if let account {
            _ = try await ledger.accounts.linkAccount(
                LinkAccountRequest(idempotencyKey: "link-\(token)", key: google(token), accountID: account))
        }
        return try await ledger.verifiedStates.subscription(google(token))
    }

    // MARK: ReplayInbox

    @Test(
        "a replay with a reason is in the audit trail of the entry's subscription, with the caller, and logged; without one, nothing is recorded",
        arguments: engines)
    func inboxReplay(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let (transport, sink) = try Self.methods(ledger)
            let key = Self.google("tok-replay")
            _ = try await Self.recordGoogle(ledger, "tok-replay", .active, at: clock.now, account: "acct-1")
            for (id, entryKey) in [("n-1", key), ("n-orphan", nil)] {
                _ = try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(
                        entry: InboxEntry(
                            store: .google, environment: .production, notificationID: id, notificationType: "2",
                            key: entryKey)))
                _ = try await ledger.inbox.markInbox(
                    MarkInboxRequest(store: .google, notificationID: id, status: .failed, error: "play: 503"))
            }
            let before = try await ledger.accounts.history(GetHistoryRequest(key: key)).events
            let feedBefore = try await ledger.changeFeed.lastPosition()
            // Without a reason (the verifier's own replays): the entry only.
            let plain: MarkInboxResponse = try await transport.call(
                LedgerRPC.replayInbox, ReplayInboxRequest(store: .google, notificationID: "n-1"))
            #expect(plain.entry?.status == .pending)
            #expect(try await ledger.accounts.history(GetHistoryRequest(key: key)).events == before)
            #expect(try await ledger.changeFeed.lastPosition() == feedBefore)
            _ = try await ledger.inbox.markInbox(
                MarkInboxRequest(store: .google, notificationID: "n-1", status: .failed, error: "play: 503"))

            clock.advance(by: 1000)
            let replayed: MarkInboxResponse = try await transport.call(
                LedgerRPC.replayInbox, ReplayInboxRequest(store: .google, notificationID: "n-1", reason: "ticket 77"))
            #expect(replayed.entry?.status == .pending && replayed.entry?.attempts == 2)
            let events = try await ledger.accounts.history(GetHistoryRequest(key: key)).events
            #expect(events.count == before.count + 1)
            let audit = try #require(events.first)
            let expected = LifecycleEvent(
                position: feedBefore + 1, key: key, kind: .storeAction, storeTimeMilliseconds: clock.now,
                verifiedTimeMilliseconds: clock.now, accountID: "acct-1", storeSubtype: "REPLAY_NOTIFICATION",
                notificationID: "n-1", state: .active,
                detail: "notification n-1 (2) put back to pending; it was failed after 2 attempts: play: 503",
                actor: Self.actor, reason: "ticket 77", traceID: audit.traceID)
            #expect(audit == expected)
            // The account's trail has it too, and the change feed carries it alone, no state changed.
            #expect(try await ledger.accounts.history(GetHistoryRequest(accountID: "acct-1")).events.first == audit)
            let change = try #require(try await ledger.changeFeed.changes(after: feedBefore, limit: 10).first)
            #expect(change.kind == .account && change.subscription == nil && change.events == [audit])

            // An entry that names no subscription: replayed, and only the log says who and why.
            let orphan: MarkInboxResponse = try await transport.call(
                LedgerRPC.replayInbox,
                ReplayInboxRequest(store: .google, notificationID: "n-orphan", reason: "ticket 78"))
            #expect(orphan.entry?.status == .pending)
            #expect(try await ledger.changeFeed.lastPosition() == feedBefore + 1)
            #expect(
                try Self.logged(sink, "operator replay") == [
                    [
                        "method": "ReplayInbox", "store": "google", "notification_id": "n-1", "actor": Self.actor,
                        "reason": "ticket 77",
                    ],
                    [
                        "method": "ReplayInbox", "store": "google", "notification_id": "n-orphan",
                        "actor": Self.actor, "reason": "ticket 78",
                    ],
                ])
        }
    }

    @Test(
        "a replay's reason is 1 to 512 bytes; a refused replay, or one of an entry with no key, records nothing",
        arguments: engines)
    func inboxReplayReasonLimits(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            _ = try await ledger.inbox.recordNotification(
                RecordNotificationRequest(
                    entry: InboxEntry(
                        store: .apple, environment: .production, notificationID: "n", notificationType: "T")
                ))
            _ = try await ledger.inbox.replayInbox(
                ReplayInboxRequest(store: .apple, notificationID: "n", reason: String(repeating: "x", count: 512)),
                actor: "a")
            await #expect(throws: LedgerError.invalidArgument("reason is missing")) {
                _ = try await ledger.inbox.replayInbox(
                    ReplayInboxRequest(store: .apple, notificationID: "n", reason: ""), actor: "a")
            }
            await #expect(throws: LedgerError.invalidArgument("reason is 513 bytes; at most 512 are allowed")) {
                _ = try await ledger.inbox.replayInbox(
                    ReplayInboxRequest(store: .apple, notificationID: "n", reason: String(repeating: "x", count: 513)),
                    actor: "a")
            }
            #expect(try await ledger.changeFeed.lastPosition() == 0)
        }
    }

    // MARK: ReplayDeliveries of one dead letter

    @Test(
        "a dead letter delivered again: back to delivery with its event, the endpoint enabled, the redelivery in the account's trail and the log",
        arguments: engines)
    func redelivery(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let (transport, sink) = try Self.methods(ledger)
            let key = Self.google("tok-hook")
            let event = Event(
                id: "evt_7_0", type: "subscription.renewed", accountID: "acct-9", key: key, position: 7, sequence: 1)
            let lease = try await ledger.cursors.acquireLease(
                AcquireLeaseRequest(name: "webhook.crm", owner: "d1", ttlMilliseconds: 60_000))
            try #require(lease.held)
            let dead = DeliveryAttempt(
                sequence: 1, attempts: 9, firstAttemptMilliseconds: clock.now - 5000,
                nextAttemptMilliseconds: clock.now, lastStatus: 503, deadMilliseconds: clock.now, event: event)
            _ = try await ledger.eventLog.recordDeliveries(
                RecordDeliveriesRequest(
                    endpoint: "crm", owner: "d1", deliveredThrough: 2, attempts: [dead], disable: true))
            #expect(try await ledger.eventLog.deadLetters(ListDeadLettersRequest()).deadLetters.count == 1)

            // What is refused changes nothing.
            await #expect(throws: RPCError(.invalidArgument, "give after_sequence or sequence, not both")) {
                let _: GetDeliveryStateResponse = try await transport.call(
                    LedgerRPC.replayDeliveries, ReplayDeliveriesRequest(endpoint: "crm", afterSequence: 1, sequence: 1))
            }
            await #expect(
                throws: RPCError(
                    .notFound,
                    #"sequence 2 is not a dead letter of webhook endpoint "crm" (ListDeadLetters lists them)"#)
            ) {
                let _: GetDeliveryStateResponse = try await transport.call(
                    LedgerRPC.replayDeliveries, ReplayDeliveriesRequest(endpoint: "crm", sequence: 2, reason: "x"))
            }
            let feed = try await ledger.changeFeed.lastPosition()

            clock.advance(by: 1000)
            let state: GetDeliveryStateResponse = try await transport.call(
                LedgerRPC.replayDeliveries, ReplayDeliveriesRequest(endpoint: "crm", sequence: 1, reason: "ticket 5"))
            // Due at once, not tried since: the deliverer times its attempts by its own clock.
            let again = DeliveryAttempt(
                sequence: 1, attempts: 0, firstAttemptMilliseconds: 0, nextAttemptMilliseconds: 0, lastStatus: 503,
                event: event)
            #expect(
                state
                    == GetDeliveryStateResponse(deliveredThrough: 2, retrying: [], redelivering: [again]))
            #expect(try await ledger.eventLog.deadLetters(ListDeadLettersRequest()).deadLetters.isEmpty)
            let audit = try #require(
                try await ledger.accounts.history(GetHistoryRequest(accountID: "acct-9")).events.first)
            #expect(
                audit
                    == LifecycleEvent(
                        position: feed + 1, key: key, kind: .storeAction, storeTimeMilliseconds: clock.now,
                        verifiedTimeMilliseconds: clock.now, accountID: "acct-9", storeSubtype: "REDELIVER_WEBHOOK",
                        detail: "webhook event evt_7_0 (subscription.renewed, sequence 1) put back for delivery to "
                            + "endpoint crm, given up on after 9 attempts",
                        actor: Self.actor, reason: "ticket 5", traceID: audit.traceID))
            #expect(try await ledger.accounts.history(GetHistoryRequest(key: key)).events == [audit])
            #expect(
                try Self.logged(sink, "operator replay") == [
                    [
                        "method": "ReplayDeliveries", "endpoint": "crm", "sequence": "1", "actor": Self.actor,
                        "reason": "ticket 5",
                    ]
                ])

            // A failed attempt keeps its event (the log is not read again below the position);
            // delivered, it goes.
            var failed = again
            failed.attempts = 1
            failed.firstAttemptMilliseconds = clock.now
            failed.nextAttemptMilliseconds = clock.now + 1000
            _ = try await ledger.eventLog.recordDeliveries(
                RecordDeliveriesRequest(endpoint: "crm", owner: "d1", deliveredThrough: 2, attempts: [failed]))
            #expect(
                try await ledger.eventLog.deliveryState(GetDeliveryStateRequest(endpoint: "crm")).redelivering == [
                    failed
                ])
            _ = try await ledger.eventLog.recordDeliveries(
                RecordDeliveriesRequest(
                    endpoint: "crm", owner: "d1", deliveredThrough: 2, delivered: [DeliveryAttempt(sequence: 1)]))
            #expect(
                try await ledger.eventLog.deliveryState(GetDeliveryStateRequest(endpoint: "crm"))
                    == GetDeliveryStateResponse(deliveredThrough: 2))
        }
    }

    // MARK: Purchases awaiting acknowledgement

    @Test(
        "unacknowledged lists the Google purchases not acknowledged that are neither ended nor pending, page by page",
        arguments: engines)
    func unacknowledged(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let at = clock.now
            let active = try await Self.recordGoogle(ledger, "g-1-active", .active, at: at)
            _ = try await Self.recordGoogle(ledger, "g-2-acknowledged", .active, acknowledged: true, at: at)
            _ = try await Self.recordGoogle(ledger, "g-3-expired", .expired, at: at)
            _ = try await Self.recordGoogle(ledger, "g-4-pending", .pending, at: at)
            let hold = try await Self.recordGoogle(ledger, "g-5-hold", .accountHold, at: at)
            _ = try await ledger.verifiedStates.recordVerifiedState(
                LedgerConformanceTests.record(
                    "apple", LedgerConformanceTests.state(.apple("2000"), .active, storeTime: at)))
            let first = try await ledger.verifiedStates.listSubscriptions(
                ListSubscriptionsRequest(store: .google, pageSize: 1, unacknowledged: true))
            #expect(first.subscriptions == [active] && first.nextPageToken != nil)
            let second = try await ledger.verifiedStates.listSubscriptions(
                ListSubscriptionsRequest(
                    store: .google, pageSize: 1, pageToken: first.nextPageToken, unacknowledged: true))
            #expect(second.subscriptions == [hold] && second.nextPageToken == nil)
            // Acknowledged since: out of the queue.
            _ = try await Self.recordGoogle(ledger, "g-1-active", .active, acknowledged: true, at: at + 1)
            let after = try await ledger.verifiedStates.listSubscriptions(
                ListSubscriptionsRequest(store: .google, unacknowledged: true))
            #expect(after.subscriptions.map(\.key.storeID) == ["g-5-hold"])
            // Without the filter, every Google purchase.
            let all = try await ledger.verifiedStates.listSubscriptions(ListSubscriptionsRequest(store: .google))
            #expect(all.subscriptions.count == 5)
            await #expect(
                throws: LedgerError.invalidArgument(
                    "unacknowledged lists Google Play purchases only: set store STORE_GOOGLE")
            ) {
                _ = try await ledger.verifiedStates.listSubscriptions(
                    ListSubscriptionsRequest(store: .apple, unacknowledged: true))
            }
        }
    }
}
