public import Model

extension Period {
    /// Month `n` (thirty days) of an App Store chain of `pro.monthly` whose first month starts at
    /// `start`, its transaction id `2000 + n`, signed a day before the month begins unless
    /// `signed` says when.
    public static func month(
        _ n: Int64, from start: Int64, revoked: Int64? = nil, signed: Int64? = nil, raw: String? = nil
    ) -> Period {
        let day: Int64 = 86_400_000
        return Period(
            periodID: "\(2000 + n)", productID: "pro.monthly", startMilliseconds: start + n * 30 * day,
            endMilliseconds: start + (n + 1) * 30 * day, revokedTimeMilliseconds: revoked,
            signedTimeMilliseconds: signed ?? (start + n * 30 * day - day), productKind: .autoRenewable, raw: raw)
    }
}

extension Subscription {
    /// An active state of `pro.monthly` holding `periods` half-second periods with long ids
    /// (about 140 bytes each): a state as large as the ledger takes, for size limits.
    public static func large(_ key: SubscriptionKey, periods: Int = 256) -> Subscription {
        var state = Subscription(key: key, productID: "pro.monthly", state: .active)
        state.periods = (0..<periods).map { n in
            Period(
                periodID: "period-\(n)-" + String(repeating: "p", count: 100), productID: "pro.monthly",
                startMilliseconds: Int64(n) * 1000, endMilliseconds: Int64(n) * 1000 + 500)
        }
        return state
    }
}
