import Model
import Testing

@testable import LedgerService

/// The ledger's merge rules as tables: which state stands, what it keeps of the stored one, and
/// when the row is written.
@Suite("State merge rules")
struct StateMergeTests {
    static let apple = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000000000001")
    static let google = SubscriptionKey(store: .google, environment: .production, storeID: "token-1")

    static func state(
        _ key: SubscriptionKey = apple, _ state: SubscriptionState = .active, storeTime: Int64, expires: Int64 = 2_000,
        order: String? = "1", acknowledged: Bool = false, account: String? = nil, replacedBy: String? = nil
    ) -> Subscription {
        Subscription(
            key: key, accountID: account, productID: "pro", state: state, expiresTimeMilliseconds: expires,
            acknowledged: acknowledged, storeTimeMilliseconds: storeTime, replacedByStoreID: replacedBy,
            bundleOrPackage: "com.example", latestOrderID: order)
    }

    @Test(
        "which state applies: the later store time; at the same time the one that ends access sooner; partial only over its own transaction"
    )
    func applies() {
        let stored = Self.state(storeTime: 100, expires: 2_000, order: "1")
        let cases: [(String, Subscription, Subscription?, Bool, Bool)] = [
            ("nothing stored", Self.state(storeTime: 1), nil, false, true),
            ("nothing stored, partial", Self.state(storeTime: 1), nil, true, true),
            ("later store time", Self.state(storeTime: 101, order: "2"), stored, false, true),
            ("earlier store time", Self.state(storeTime: 99, order: "0"), stored, false, false),
            ("same time, access ends sooner", Self.state(storeTime: 100, expires: 1_500), stored, false, true),
            ("same time, access ends later", Self.state(storeTime: 100, expires: 2_500), stored, false, false),
            ("same time, expired beats active", Self.state(Self.apple, .expired, storeTime: 100), stored, false, true),
            ("the same state again", stored, stored, false, true),
            ("partial, later, same transaction", Self.state(storeTime: 101, order: "1"), stored, true, true),
            ("partial, later, another transaction", Self.state(storeTime: 101, order: "2"), stored, true, false),
            ("partial, earlier, same transaction", Self.state(storeTime: 99, order: "1"), stored, true, false),
        ]
        for (name, incoming, current, partial, expected) in cases {
            #expect(StateMerge.applies(incoming, over: current, partial: partial) == expected, "\(name)")
        }
    }

    @Test("the candidate takes the ledger's account and keeps the lineage it knows")
    func candidate() {
        let current = Self.state(storeTime: 100, account: "old", replacedBy: "token-2")
        let cases: [(String, Subscription, Subscription?, String?, String?, String?)] = [
            ("no stored state", Self.state(storeTime: 101, account: "store-said"), nil, "linked", "linked", nil),
            ("lineage kept", Self.state(storeTime: 101), current, "linked", "linked", "token-2"),
            (
                "the store names a successor", Self.state(storeTime: 101, replacedBy: "token-3"), current, nil, nil,
                "token-3"
            ),
        ]
        for (name, incoming, current, account, expectedAccount, expectedLineage) in cases {
            let next = StateMerge.candidate(incoming, current: current, account: account)
            #expect(next.accountID == expectedAccount, "\(name)")
            #expect(next.replacedByStoreID == expectedLineage, "\(name)")
        }
    }

    @Test("what stands and whether the row is written: periods, Play's revocation, acknowledgement")
    func result() {
        let period = Period(periodID: "1", productID: "pro", startMilliseconds: 0, endMilliseconds: 2_000)
        let revokedPeriod = Period(
            periodID: "1", productID: "pro", startMilliseconds: 0, endMilliseconds: 2_000, revokedTimeMilliseconds: 900)
        var stored = Self.state(storeTime: 100, acknowledged: true)
        stored.periods = [period]
        let newer = Self.state(storeTime: 101, expires: 3_000)
        let older = Self.state(storeTime: 99, expires: 1_000)

        // Applied: the newer state stands, with the stored periods and the acknowledgement.
        var merged = StateMerge.result(next: newer, current: stored, applied: true, accessPeriods: nil)
        #expect(merged.saves && merged.state.expiresTimeMilliseconds == 3_000)
        #expect(merged.state.periods == [period] && merged.state.acknowledged)

        // Not applied, nothing new: the stored state stands and nothing is written.
        merged = StateMerge.result(next: older, current: stored, applied: false, accessPeriods: nil)
        #expect(!merged.saves && merged.state == stored)

        // Not applied but periods recorded: the stored state with the new periods is written.
        merged = StateMerge.result(next: older, current: stored, applied: false, accessPeriods: [revokedPeriod])
        #expect(
            merged.saves && merged.state.expiresTimeMilliseconds == 2_000 && merged.state.periods == [revokedPeriod])

        // Not applied, but the incoming state acknowledges: the acknowledgement is written.
        var unacknowledged = stored
        unacknowledged.acknowledged = false
        var acknowledging = older
        acknowledging.acknowledged = true
        merged = StateMerge.result(next: acknowledging, current: unacknowledged, applied: false, accessPeriods: nil)
        #expect(merged.saves && merged.state.acknowledged && merged.state.storeTimeMilliseconds == 100)

        // Play: an expired state whose last period is revoked stands as revoked, at that time;
        // an App Store state is left as it is.
        let playExpired = Self.state(Self.google, .expired, storeTime: 101)
        merged = StateMerge.result(next: playExpired, current: nil, applied: true, accessPeriods: [revokedPeriod])
        #expect(merged.state.state == .revoked && merged.state.revokedTimeMilliseconds == 900)
        let appleExpired = Self.state(Self.apple, .expired, storeTime: 101)
        merged = StateMerge.result(next: appleExpired, current: nil, applied: true, accessPeriods: [revokedPeriod])
        #expect(merged.state.state == .expired && merged.state.revokedTimeMilliseconds == nil)
    }
}
