import Foundation
import LedgerService
import Model
import RPC
import TestSupport
import Testing
import Wire

/// Verified periods in the ledger, on every engine: each recorded once, the later-signed version
/// standing, merged into the state's access periods, never erased by a state, and states in a
/// total order.
@Suite("Ledger periods")
struct LedgerPeriodTests {
    static let engines = LedgerEngine.available
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_790_000_000_000
    static let key = SubscriptionKey.apple("1000")

    func withLedger(_ engine: LedgerEngine, _ body: (Ledger) async throws -> Void) async throws {
        let (database, remove) = try await engine.open()
        defer { remove() }
        let clock = TestClock()
        try await body(Ledger(database: database, now: { clock.now }))
        await database.close()
    }

    static func month(_ n: Int64, revoked: Int64? = nil, signed: Int64? = nil) -> Period {
        Period.month(n, from: t0, revoked: revoked, signed: signed, raw: "eyJhbGciOiJFUzI1NiJ9.month\(n).sig")
    }

    static func state(_ state: SubscriptionState, storeTime: Int64, latest: Int64) -> Subscription {
        Subscription(
            key: key, productID: "pro.monthly", productKind: .autoRenewable, state: state,
            purchaseTimeMilliseconds: t0 + latest * 30 * day, expiresTimeMilliseconds: t0 + (latest + 1) * 30 * day,
            storeTimeMilliseconds: storeTime, bundleOrPackage: "com.example.app", latestOrderID: "\(2000 + latest)")
    }

    static func request(
        _ key: String, _ subscription: Subscription, _ periods: [Period], partial: Bool = false
    ) -> RecordVerifiedStateRequest {
        RecordVerifiedStateRequest(idempotencyKey: key, subscription: subscription, periods: periods, partial: partial)
    }

    @Test("an early renewal adds its period: the state holds one merged period over both", arguments: engines)
    func earlyRenewal(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger in
            _ = try await ledger.verifiedStates.recordVerifiedState(
                Self.request("a", Self.state(.active, storeTime: Self.t0, latest: 0), [Self.month(0)]))
            let renewed = try await ledger.verifiedStates.recordVerifiedState(
                Self.request(
                    "b", Self.state(.active, storeTime: Self.t0 + 29 * Self.day, latest: 1), [Self.month(1)]))
            let periods = try #require(renewed.subscription?.periods)
            #expect(periods.count == 1)
            #expect(periods[0].startMilliseconds == Self.t0)
            #expect(periods[0].endMilliseconds == Self.t0 + 60 * Self.day)
            #expect(periods[0].raw == nil)
            let stored = try await ledger.verifiedStates.subscriptionAndPeriods(Self.key)
            #expect(stored.periods.map(\.periodID) == ["2000", "2001"])
            #expect(stored.periods[1].raw == "eyJhbGciOiJFUzI1NiJ9.month1.sig")
            // The state only: the same state, no recorded periods or raw data.
            let stateOnly = try await ledger.verifiedStates.subscriptionAndPeriods(Self.key, stateOnly: true)
            #expect(stateOnly.subscription == stored.subscription && stateOnly.periods.isEmpty)
        }
    }

    @Test(
        "with the API away, a refund of an old period revokes that period only and keeps the newer state",
        arguments: engines)
    func partialRefund(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger in
            _ = try await ledger.verifiedStates.recordVerifiedState(
                Self.request(
                    "a", Self.state(.active, storeTime: Self.t0 + 89 * Self.day, latest: 3),
                    (0...3).map { Self.month($0) }))
            // The notification's own transaction: month 1, refunded; signed after the state.
            let refundedAt = Self.t0 + 100 * Self.day
            var old = Self.state(.revoked, storeTime: refundedAt, latest: 1)
            old.revokedTimeMilliseconds = refundedAt
            let answer = try await ledger.verifiedStates.recordVerifiedState(
                Self.request("b", old, [Self.month(1, revoked: refundedAt, signed: refundedAt)], partial: true))
            #expect(!answer.applied)
            let state = try #require(answer.subscription)
            #expect(state.state == .active)
            #expect(state.latestOrderID == "2003")
            #expect(state.periods.map(\.periodID) == ["2000", "2001", "2003"])
            #expect(state.periods[1].revokedTimeMilliseconds == refundedAt)
            // An older unrevoked version of month 1 does not undo the refund.
            let stale = try await ledger.verifiedStates.recordVerifiedState(
                Self.request("c", Self.state(.active, storeTime: Self.t0 + 89 * Self.day, latest: 3), [Self.month(1)]))
            #expect(stale.subscription?.periods[1].revokedTimeMilliseconds == refundedAt)
        }
    }

    @Test(
        "a grace that ended in a recovery is one status interval whichever fact arrives first; a partial state is no fact",
        arguments: engines)
    func graceInterval(engine: LedgerEngine) async throws {
        // Month 0 paid; the renewal failed at its end (grace for 16 days from day 30); recovered
        // on day 33, whose transaction starts then.
        var grace = Self.state(.gracePeriod, storeTime: Self.t0 + 30 * Self.day, latest: 0)
        grace.graceExpiresTimeMilliseconds = Self.t0 + 46 * Self.day
        var recovered = Self.state(.active, storeTime: Self.t0 + 33 * Self.day, latest: 1)
        recovered.purchaseTimeMilliseconds = Self.t0 + 33 * Self.day
        let recovery = Period(
            periodID: "2001", productID: "pro.monthly", startMilliseconds: Self.t0 + 33 * Self.day,
            endMilliseconds: Self.t0 + 63 * Self.day, signedTimeMilliseconds: Self.t0 + 33 * Self.day,
            productKind: .autoRenewable)
        let expected = [
            StatusInterval(
                state: .gracePeriod, startMilliseconds: Self.t0 + 30 * Self.day,
                endMilliseconds: Self.t0 + 33 * Self.day, shownTimeMilliseconds: Self.t0 + 30 * Self.day,
                endedTimeMilliseconds: Self.t0 + 33 * Self.day)
        ]
        for recoveryFirst in [false, true] {
            try await withLedger(engine) { ledger in
                var requests = [
                    Self.request("grace", grace, [Self.month(0)]), Self.request("recovered", recovered, [recovery]),
                ]
                if recoveryFirst { requests.reverse() }
                for request in requests { _ = try await ledger.verifiedStates.recordVerifiedState(request) }
                // A refund notification's own transaction, later: partial, so no fact of the state.
                var refund = Self.state(.gracePeriod, storeTime: Self.t0 + 40 * Self.day, latest: 0)
                refund.graceExpiresTimeMilliseconds = Self.t0 + 46 * Self.day
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.request("refund", refund, [], partial: true))
                let stored = try await ledger.verifiedStates.subscriptionAndPeriods(Self.key)
                #expect(stored.subscription?.statusIntervals == expected, "recovery first: \(recoveryFirst)")
                #expect(stored.subscription?.state == .active)
            }
        }
    }

    @Test(
        "a fact's time: an App Store state's own store time (a notification processed late is the state read then); a Play state's notification time",
        arguments: engines)
    func factTime(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger in
            // Grace from day 30, stated to day 46; the grace notification of day 31 processed on
            // day 40, reading the state then (still grace): the fact is of day 40, and the grace
            // read on day 50 as expired ends at its stated end.
            var grace = Self.state(.gracePeriod, storeTime: Self.t0 + 40 * Self.day, latest: 0)
            grace.graceExpiresTimeMilliseconds = Self.t0 + 46 * Self.day
            grace.expiresTimeMilliseconds = Self.t0 + 30 * Self.day
            let notified = LifecycleEvent(
                key: Self.key, kind: .gracePeriodStarted, storeTimeMilliseconds: Self.t0 + 31 * Self.day)
            _ = try await ledger.verifiedStates.recordVerifiedState(
                RecordVerifiedStateRequest(
                    idempotencyKey: "g", subscription: grace, events: [notified], periods: [Self.month(0)]))
            let expired = Self.state(.expired, storeTime: Self.t0 + 50 * Self.day, latest: 0)
            let answer = try await ledger.verifiedStates.recordVerifiedState(Self.request("e", expired, []))
            #expect(
                answer.subscription?.statusIntervals == [
                    StatusInterval(
                        state: .gracePeriod, startMilliseconds: Self.t0 + 30 * Self.day,
                        endMilliseconds: Self.t0 + 46 * Self.day, shownTimeMilliseconds: Self.t0 + 40 * Self.day)
                ])
            // Play: the state's store time is when it was read; the notification says when.
            let token = SubscriptionKey(store: .google, environment: .production, storeID: "token")
            var paused = Subscription(
                key: token, productID: "pro_sub", productKind: .autoRenewable, state: .paused,
                expiresTimeMilliseconds: Self.t0 + 30 * Self.day, storeTimeMilliseconds: Self.t0 + 45 * Self.day,
                autoResumeTimeMilliseconds: Self.t0 + 60 * Self.day)
            paused.bundleOrPackage = "com.example.app"
            let rtdn = LifecycleEvent(key: token, kind: .paused, storeTimeMilliseconds: Self.t0 + 30 * Self.day)
            let recorded = try await ledger.verifiedStates.recordVerifiedState(
                RecordVerifiedStateRequest(idempotencyKey: "p", subscription: paused, events: [rtdn]))
            #expect(recorded.subscription?.statusIntervals.first?.shownTimeMilliseconds == Self.t0 + 30 * Self.day)
        }
    }

    @Test("two states at one store time end the same in both orders", arguments: engines)
    func equalStoreTimes(engine: LedgerEngine) async throws {
        var finals: [SubscriptionState?] = []
        for order in [[SubscriptionState.active, .expired], [.expired, .active]] {
            try await withLedger(engine) { ledger in
                for (index, state) in order.enumerated() {
                    _ = try await ledger.verifiedStates.recordVerifiedState(
                        Self.request("k\(index)", Self.state(state, storeTime: Self.t0, latest: 0), [Self.month(0)]))
                }
                finals.append(try await ledger.verifiedStates.subscription(Self.key).state)
            }
        }
        #expect(finals == [.expired, .expired])
    }

    @Test("the same evidence processed again replays and still marks its notification processed", arguments: engines)
    func replayMarksProcessed(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger in
            let entry = InboxEntry(
                store: .apple, environment: .sandbox, notificationID: "n-1", notificationType: "DID_RENEW",
                rawPayload: "payload")
            _ = try await ledger.inbox.recordNotification(RecordNotificationRequest(entry: entry))
            var request = Self.request("same", Self.state(.active, storeTime: Self.t0, latest: 0), [Self.month(0)])
            request.notificationID = "n-1"
            _ = try await ledger.verifiedStates.recordVerifiedState(request)
            _ = try await ledger.inbox.replayInbox(ReplayInboxRequest(store: .apple, notificationID: "n-1"))
            let again = try await ledger.verifiedStates.recordVerifiedState(request)
            #expect(again.replayed)
            let listed = try await ledger.inbox.listInbox(ListInboxRequest(status: .processed))
            #expect(listed.entries.map(\.notificationID) == ["n-1"])
        }
    }

    @Test("periods are checked: an id, a product, a start, an end not before it, at most 256", arguments: engines)
    func periodChecks(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger in
            let state = Self.state(.active, storeTime: Self.t0, latest: 0)
            var backwards = Self.month(0)
            backwards.endMilliseconds = backwards.startMilliseconds - 1
            var noID = Self.month(0)
            noID.periodID = ""
            for (periods, message) in [
                ([backwards], "periods[0].end_ms \(Self.t0 - 1) is before its start_ms \(Self.t0)"),
                ([noID], "periods[0].period_id is missing"),
                (Array(repeating: Self.month(0), count: 257), "at most 256 periods per request, got 257"),
            ] {
                await #expect(throws: LedgerError.invalidArgument(message)) {
                    try await ledger.verifiedStates.recordVerifiedState(Self.request("x", state, periods))
                }
            }
            await #expect(throws: LedgerError.notFound("no subscription \(Self.key)")) {
                try await ledger.verifiedStates.subscription(Self.key)
            }
        }
    }
}
