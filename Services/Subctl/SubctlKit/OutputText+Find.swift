import Model
public import Wire

/// The human output of `find`, in the ledger commands' style.
extension OutputText {
    /// `found VALUE as apple_transaction_id`; an `account` line per account; a `subscription`
    /// line per subscription (with what matched), each followed by its `period` lines (every
    /// recorded period, not joined) and `status` lines; an `unrecorded` line per App Store purchase of an order the ledger has not
    /// recorded; then the events, newest first.
    public static func found(_ value: String, _ response: FindResponse) -> [String] {
        var lines = ["found \(value) as \(response.takenAs.map(\.description) ?? "-")"]
        lines += response.accountIDs.map { "account \($0)" }
        for found in response.subscriptions {
            guard let subscription = found.subscription else { continue }
            lines.append(self.subscription(subscription) + " matched \(found.matched.map(\.description) ?? "-")")
            lines += found.periods.map(period)
            lines += subscription.statusIntervals.map(status)
        }
        lines += response.unrecordedOriginalTransactionIDs.map {
            "unrecorded apple \($0): not in the ledger; verify it (RestorePurchases or VerifyApplePurchase) to record it"
        }
        return lines + response.events.map(event)
    }

    /// `  period 2000000009 product pro.monthly start 2026-01-01T00:00:00Z end 2026-02-01T00:00:00Z
    /// revoked -`.
    static func period(_ period: Period) -> String {
        "  period \(period.periodID) product \(period.productID) start \(time(period.startMilliseconds))"
            + " end \(time(period.endMilliseconds)) revoked \(time(period.revokedTimeMilliseconds))"
    }

    /// `  status grace_period from 2026-02-01T00:00:00Z to 2026-02-17T00:00:00Z` (`-`: not ended).
    static func status(_ interval: StatusInterval) -> String {
        "  status \(interval.state.map(\.description) ?? "-") from \(time(interval.startMilliseconds))"
            + " to \(time(interval.endMilliseconds))"
    }

    /// `access ACCOUNT CAPABILITY until TIME` per capability the account has now (`until -`: no
    /// end), or `access ACCOUNT none`.
    public static func access(_ account: String, _ response: ListEntitlementsResponse) -> [String] {
        guard !response.entitlements.isEmpty else { return ["access \(account) none"] }
        return response.entitlements.map { "access \(account) \($0.capability) until \(time($0.untilMilliseconds))" }
    }
}
