import Foundation
import LedgerService
import Model
import TestSupport
import Testing
import Wire

/// `FindSubscriptions` on every engine: a value as a key's store id, as an Apple transaction id
/// or a Google order id of a recorded period, and as an account; the lookup table filled by every
/// write of a period and, for a ledger recorded before it existed, by its migration.
@Suite("Ledger find subscriptions")
struct LedgerFindTests {
    static let engines = LedgerEngine.available
    static let t0: Int64 = 1_790_000_000_000
    static let day: Int64 = 86_400_000
    static let apple = SubscriptionKey.apple("1000")
    static let google = SubscriptionKey(store: .google, environment: .production, storeID: "token-abc")
    static let order = "GPA.3301-2207-9912-45518"

    /// An Apple subscription with transactions 2000 and 2001 linked to `acct-1`, and a Google one
    /// with its first order and first renewal (`..0` is Play's first renewal's suffix).
    static func record(_ ledger: Ledger) async throws {
        let subscription = Subscription(
            key: apple, productID: "pro.monthly", productKind: .autoRenewable, state: .active,
            expiresTimeMilliseconds: t0 + 60 * day, storeTimeMilliseconds: t0 + 30 * day,
            bundleOrPackage: "com.example.app", latestOrderID: "2001")
        _ = try await ledger.verifiedStates.recordVerifiedState(
            RecordVerifiedStateRequest(
                idempotencyKey: "a", subscription: subscription,
                periods: [Period.month(0, from: t0), Period.month(1, from: t0)]))
        _ = try await ledger.accounts.linkAccount(
            LinkAccountRequest(idempotencyKey: "l", key: apple, accountID: "acct-1"))
        let renewal = "\(order)..0"
        let play = Subscription(
            key: google, productID: "pro.monthly", productKind: .autoRenewable, state: .active,
            expiresTimeMilliseconds: t0 + 60 * day, storeTimeMilliseconds: t0 + 30 * day,
            bundleOrPackage: "com.example.app", latestOrderID: renewal)
        let periods = [order, renewal].enumerated().map { index, id in
            Period(
                periodID: Period.googlePeriodID(orderID: id, productID: "pro.monthly"), productID: "pro.monthly",
                startMilliseconds: t0 + Int64(index) * 30 * day, endMilliseconds: t0 + Int64(index + 1) * 30 * day,
                signedTimeMilliseconds: t0 + 30 * day, productKind: .autoRenewable)
        }
        _ = try await ledger.verifiedStates.recordVerifiedState(
            RecordVerifiedStateRequest(idempotencyKey: "g", subscription: play, periods: periods))
    }

    static func found(_ ledger: Ledger, _ value: String) async throws -> [String] {
        let answer = try await ledger.accounts.findSubscriptions(FindSubscriptionsRequest(value: value))
        return answer.matches.map { "\($0.matched.map(String.init(describing:)) ?? "-") \($0.key?.storeID ?? "")" }
    }

    @Test("each id a customer quotes finds its subscription, saying what it matched", arguments: engines)
    func findsEveryKind(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            try await Self.record(ledger)
            #expect(try await Self.found(ledger, "1000") == ["apple_original_transaction_id 1000"])
            #expect(try await Self.found(ledger, "2001") == ["apple_transaction_id 1000"])
            #expect(try await Self.found(ledger, "token-abc") == ["google_purchase_token token-abc"])
            #expect(try await Self.found(ledger, Self.order) == ["google_order_id token-abc"])
            #expect(try await Self.found(ledger, "\(Self.order)..0") == ["google_order_id token-abc"])
            // A renewal the ledger has not recorded is found by its base order id.
            #expect(try await Self.found(ledger, "\(Self.order)..7") == ["google_order_id token-abc"])
            let account = try await ledger.accounts.findSubscriptions(FindSubscriptionsRequest(value: "acct-1"))
            #expect(account.accountID == "acct-1")
            #expect(account.matches.map(\.matched) == [.accountID])
            #expect(account.matches.map(\.accountID) == ["acct-1"])
            let byTransaction = try await ledger.accounts.findSubscriptions(FindSubscriptionsRequest(value: "2000"))
            #expect(byTransaction.matches.map(\.accountID) == ["acct-1"] && byTransaction.accountID == nil)
            let unknown = try await ledger.accounts.findSubscriptions(FindSubscriptionsRequest(value: "GPA.0000"))
            #expect(unknown.matches.isEmpty && unknown.accountID == nil)
        }
    }

    @Test("an empty value is INVALID_ARGUMENT", arguments: engines)
    func emptyValue(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            await #expect(throws: LedgerError.self) {
                _ = try await ledger.accounts.findSubscriptions(FindSubscriptionsRequest(value: ""))
            }
        }
    }

    @Test("the migration fills the lookup table from the periods recorded before it", arguments: engines)
    func migrationFillsExistingPeriods(engine: LedgerEngine) async throws {
        let (database, remove) = try await engine.open()
        defer { remove() }
        let ledger = Ledger(database: database)
        try await Self.record(ledger)
        // Back to version 6: the periods recorded, no lookup table or store id index (nor the
        // trace columns of version 8, nor the acknowledgement column of version 9).
        try await database.write { tx in
            try tx.query("DROP TABLE period_lookup")
            try tx.query("DROP INDEX subscriptions_by_store_id")
            try LedgerTraceTests.dropTraceColumns(tx)
            try MigrationTests.dropUnacknowledgedColumn(tx)
            try tx.query("DELETE FROM schema_migrations WHERE version >= 7")
        }
        try await database.migrate()
        #expect(try await Self.found(ledger, "2000") == ["apple_transaction_id 1000"])
        #expect(try await Self.found(ledger, "\(Self.order)..0") == ["google_order_id token-abc"])
        #expect(try await Self.found(ledger, Self.order) == ["google_order_id token-abc"])
        await database.close()
    }
}
