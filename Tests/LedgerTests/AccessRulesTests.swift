import Foundation
import Model
import TestSupport
import Testing
import Wire

@testable import LedgerService

/// Stored App Store access periods derived again under newer rules, on every engine.
@Suite("Ledger: access periods derived again under newer rules")
struct AccessRulesTests {
    static let engines = LedgerEngine.available
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_790_000_000_000

    static func month(_ n: Int64, revoked: Int64? = nil) -> Period { Period.month(n, from: t0, revoked: revoked) }

    static func state(_ id: String, _ state: SubscriptionState, ownership: Ownership) -> Subscription {
        Subscription(
            key: .apple(id), productID: "pro.monthly", productKind: .autoRenewable, state: state,
            ownership: ownership, purchaseTimeMilliseconds: t0 + 30 * day, expiresTimeMilliseconds: t0 + 60 * day,
            storeTimeMilliseconds: t0 + 30 * day - day / 2, bundleOrPackage: "com.example.app")
    }

    /// The ledger as one that stored its states before the current rules: no version recorded.
    static func olderRules(_ ledger: Ledger) async throws {
        _ = try await ledger.transactions.write { tx in
            try tx.query("DELETE FROM cursors WHERE name = $1", [.text(Ledger.accessRulesCursor)])
        }
    }

    @Test(
        "a state derived under older rules is written again as a change, a page at a time; a current one and one without recorded periods are left; the version is recorded once",
        arguments: engines)
    func deriveAgain(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            // A new database holds nothing to derive again.
            #expect(
                try await ledger.cursors.cursor(GetCursorRequest(name: "ledger.access-rules")).value
                    == Ledger.appStoreAccessRulesVersion)
            #expect(try await ledger.verifiedStates.deriveAccessAgain(owner: "test") == nil)
            try await Self.olderRules(ledger)
            // 1000: family shared, revoked half a day before its first month ends, while the
            // renewal charged early waits: the rules end the renewal's month too.
            let revokedAt = Self.t0 + 30 * Self.day - Self.day / 2
            let shared = [Self.month(0, revoked: revokedAt), Self.month(1)]
            _ = try await ledger.verifiedStates.recordVerifiedState(
                RecordVerifiedStateRequest(
                    idempotencyKey: "a", subscription: Self.state("1000", .revoked, ownership: .familyShared),
                    periods: shared))
            let derived = try await ledger.verifiedStates.subscription(.apple("1000")).periods
            #expect(derived.count == 2 && derived.allSatisfy { $0.revokedTimeMilliseconds == revokedAt })
            // 1001: bought, its first month refunded while it ran: that month only, under any
            // rules, so it is derived already.
            let bought = try await ledger.verifiedStates.recordVerifiedState(
                RecordVerifiedStateRequest(
                    idempotencyKey: "b", subscription: Self.state("1001", .active, ownership: .purchased),
                    periods: [Self.month(0, revoked: revokedAt), Self.month(1)]))
            #expect(bought.subscription?.periods.last?.revokedTimeMilliseconds == nil)
            // A Play subscription, whose rules are not these: what it stores stays.
            let play = SubscriptionKey(store: .google, environment: .production, storeID: "token-1")
            var google = Self.state("token-1", .active, ownership: .purchased)
            google.key = play
            _ = try await ledger.verifiedStates.recordVerifiedState(
                RecordVerifiedStateRequest(idempotencyKey: "c", subscription: google, periods: [Self.month(0)]))
            // What the older rules stored for 1000 (the renewal's month granting on), a state
            // with merged periods and no recorded ones (1002), and Play periods of another shape.
            var stale = try await ledger.verifiedStates.subscription(.apple("1000"))
            stale.periods = Period.accessPeriods(shared, clipsAtNextStart: true)
            #expect(stale.periods != derived)
            var imported = Self.state("1002", .active, ownership: .purchased)
            imported.periods = [Self.month(0)]
            var otherPlay = try await ledger.verifiedStates.subscription(play)
            otherPlay.periods = [Self.month(0), Self.month(1)]
            let before = try await ledger.changeFeed.lastPosition()
            _ = try await ledger.transactions.write { [stale, imported, otherPlay] tx in
                for state in [stale, imported, otherPlay] {
                    try LedgerStore(tx).saveSubscription(state, position: before)
                }
            }

            clock.advance(by: 1000)
            let first = try #require(
                try await ledger.verifiedStates.deriveAccessAgain(after: nil, owner: "test", limit: 2))
            #expect(first.read == 2 && first.changed == 1 && !first.isLast)
            let stored = try await ledger.verifiedStates.subscriptionAndPeriods(.apple("1000"))
            #expect(stored.subscription?.periods == derived)
            let changes = try await ledger.changeFeed.changes(after: before, limit: 10)
            #expect(changes.count == 1)
            #expect(changes.first?.position == before + 1 && changes.first?.kind == .subscription)
            #expect(changes.first?.committedTimeMilliseconds == clock.now)
            #expect(changes.first?.subscription == stored.subscription)
            let last = try #require(
                try await ledger.verifiedStates.deriveAccessAgain(after: first.next, owner: "test", limit: 2))
            #expect(last.read == 0 && last.changed == 0 && last.isLast)
            #expect(try await ledger.verifiedStates.subscription(.apple("1002")).periods == [Self.month(0)])
            #expect(try await ledger.verifiedStates.subscription(play).periods == otherPlay.periods)
            #expect(
                try await ledger.verifiedStates.subscription(.apple("1001")).periods == bought.subscription?.periods)
            #expect(
                try await ledger.cursors.cursor(GetCursorRequest(name: "ledger.access-rules")).value
                    == Ledger.appStoreAccessRulesVersion)
            // Done: nothing is read again, not even a state that went stale since.
            #expect(try await ledger.verifiedStates.deriveAccessAgain(owner: "test") == nil)
            #expect(try await ledger.changeFeed.changes(after: before, limit: 10).count == 1)
            await #expect(
                throws: LedgerError.invalidArgument(
                    "name ledger.access-rules is the ledger's own cursor; it records the access rules applied")
            ) {
                _ = try await ledger.cursors.advanceCursor(AdvanceCursorRequest(name: "ledger.access-rules", value: 99))
            }
        }
    }

    @Test(
        "one instance runs the pass at a time: another's unexpired lease leaves it, an expired one is taken",
        arguments: engines)
    func oneAtATime(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            try await Self.olderRules(ledger)
            let held = try await ledger.verifiedStates.deriveAccessAgain(owner: "instance-a")
            #expect(held == LedgerVerifiedStates.AccessRulesPage())
            try await Self.olderRules(ledger)
            // instance-a holds the pass for a minute from its last page.
            #expect(
                try await ledger.verifiedStates.deriveAccessAgain(owner: "instance-b")
                    == LedgerVerifiedStates.AccessRulesPage(elsewhere: true))
            clock.advance(by: Ledger.accessRulesLeaseMilliseconds - 1)
            #expect(try await ledger.verifiedStates.deriveAccessAgain(owner: "instance-b")?.elsewhere == true)
            clock.advance(by: 1)
            #expect(
                try await ledger.verifiedStates.deriveAccessAgain(owner: "instance-b")
                    == LedgerVerifiedStates.AccessRulesPage())
            #expect(try await ledger.verifiedStates.deriveAccessAgain(owner: "instance-a") == nil)
            await #expect(throws: LedgerError.invalidArgument("lease ledger.access-rules is the ledger's own")) {
                _ = try await ledger.cursors.acquireLease(
                    AcquireLeaseRequest(name: "ledger.access-rules", owner: "caller", ttlMilliseconds: 60_000))
            }
        }
    }

    @Test("the whole pass over more than a page: every stale state once, then nothing", arguments: engines)
    func wholePass(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            try await Self.olderRules(ledger)
            let revokedAt = Self.t0 + 30 * Self.day - Self.day / 2
            let shared = [Self.month(0, revoked: revokedAt), Self.month(1)]
            var stale: [Subscription] = []
            for index in 0..<(LedgerVerifiedStates.accessRulesPage + 5) {
                let id = "\(3000 + index)"
                let response = try await ledger.verifiedStates.recordVerifiedState(
                    RecordVerifiedStateRequest(
                        idempotencyKey: id, subscription: Self.state(id, .revoked, ownership: .familyShared),
                        periods: shared))
                var state = try #require(response.subscription)
                state.periods = Period.accessPeriods(shared, clipsAtNextStart: true)
                stale.append(state)
            }
            let before = try await ledger.changeFeed.lastPosition()
            _ = try await ledger.transactions.write { [stale] tx in
                for state in stale { try LedgerStore(tx).saveSubscription(state, position: before) }
            }
            let done = try #require(try await ledger.verifiedStates.deriveAccessAgain(owner: "test"))
            #expect(
                done.read == LedgerVerifiedStates.accessRulesPage + 5
                    && done.changed == LedgerVerifiedStates.accessRulesPage + 5)
            let changes = try await ledger.changeFeed.changes(after: before, limit: 1000)
            #expect(
                Set(changes.compactMap { $0.subscription?.key.storeID }).count == LedgerVerifiedStates.accessRulesPage
                    + 5)
            #expect(changes.allSatisfy { $0.subscription?.periods.last?.revokedTimeMilliseconds == revokedAt })
            #expect(try await ledger.verifiedStates.deriveAccessAgain(owner: "test") == nil)
        }
    }
}
