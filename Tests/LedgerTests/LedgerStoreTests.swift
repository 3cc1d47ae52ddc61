import Model
import Testing
import Wire

@testable import LedgerService

/// The storage of plans on every engine: what `LedgerStore.apply` writes, the reads a plan
/// depends on find as it was written.
@Suite("Ledger store")
struct LedgerStoreTests {
    static let at: Int64 = 1_790_000_000_000
    static let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "3000")

    @Test("applied writes read back as the rows of the next plan", arguments: LedgerEngine.available)
    func roundTrip(engine: LedgerEngine) async throws {
        let (database, remove) = try await engine.open()
        defer { remove() }
        var state = Subscription(
            key: Self.key, accountID: "acct-1", productID: "pro", state: .gracePeriod,
            expiresTimeMilliseconds: Self.at - 10, graceExpiresTimeMilliseconds: Self.at + 100,
            storeTimeMilliseconds: Self.at)
        let fact = try #require(StateFact(state))
        state.statusIntervals = StateFact.intervals([fact])
        let period = Period(
            periodID: "p1", productID: "pro", startMilliseconds: Self.at - 1000, endMilliseconds: Self.at - 10,
            raw: "signed")
        var unsigned = period
        unsigned.raw = nil
        unsigned.signedTimeMilliseconds = 5
        let link = AccountLink(accountID: "acct-1", key: Self.key, linkedTimeMilliseconds: Self.at)
        let response = RecordVerifiedStateResponse(subscription: state, applied: true, replayed: false, position: 1)
        let writes: [LedgerWrite] = [
            .savePeriod(Self.key, period), .savePeriod(Self.key, unsigned), .recordStateFact(Self.key, fact),
            .recordStateFact(Self.key, fact), .saveSubscription(state, position: 1),
            .appendChange(
                Change(position: 1, committedTimeMilliseconds: Self.at, kind: .subscription, subscription: state)),
            .insertLink(link),
            .insertLink(AccountLink(accountID: "acct-2", key: Self.key, linkedTimeMilliseconds: Self.at + 1)),
            .remember(key: "k1", requestHash: "h1", response: response.serialized(), at: Self.at),
        ]
        let last = try await database.write { tx in
            try LedgerStore(tx).apply(writes)
            return tx.batch.lastPosition
        }
        #expect(last == 1)
        let intent = VerifiedStateIntent(
            request: RecordVerifiedStateRequest(idempotencyKey: "k2", subscription: state, periods: [period]),
            subscription: state, requestHash: "h2", verifiedAt: Self.at)
        let rows = try await database.read { tx in try LedgerStore(tx).verifiedStateRows(intent) }
        #expect(
            rows
                == VerifiedStateRows(
                    current: state, linkedAccount: "acct-1", periods: [Self.key: [unsigned]], facts: [fact],
                    lastPosition: 1))
        let replay = try await database.read { tx in
            try LedgerStore(tx).keyRows(idempotencyKey: "k1", key: Self.key, replacedStoreID: nil).idempotency
        }
        #expect(replay == IdempotencyRecord(requestHash: "h1", response: response.serialized()))
        // A version that brings no raw data keeps the stored one.
        let stored = try await database.read { tx in try LedgerStore(tx).storedPeriods(Self.key, raw: true) }
        var kept = unsigned
        kept.raw = "signed"
        #expect(stored == [kept])
        await database.close()
    }
}
