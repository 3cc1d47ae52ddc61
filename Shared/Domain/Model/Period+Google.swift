extension Period {
    /// Two versions of one Google order's period (the same `periodID`) as one, whichever
    /// arrived first: Google signs nothing and answers with the state as it is now, so each
    /// version is a partial view of one order, and every version counts:
    /// - the paid end is the latest end a version read while access was given (grace moves
    ///   `expiryTime` out, and that time was paid for);
    /// - where access stopped is the earliest a version read once it had (a cancellation in
    ///   grace, a revocation, a replacement: Play moves `expiryTime` back to that moment; on hold
    ///   and paused it stays at the old end);
    /// - a revocation is never lost (Play reads a revoked subscription as expired; there is no
    ///   reversal of a void): the earliest one stands;
    /// - the start is the latest known (a recovery from hold starts its order when it happened);
    /// - the rest (offer, plan, raw data) comes from the version fetched later, then the one
    ///   with the smaller content hash.
    public static func combined(_ a: Period, _ b: Period) -> Period {
        let signedA = a.signedTimeMilliseconds ?? Int64.min
        let signedB = b.signedTimeMilliseconds ?? Int64.min
        let later = signedA != signedB ? (signedA > signedB ? a : b) : (a.contentHash <= b.contentHash ? a : b)
        var result = later
        result.startMilliseconds = max(a.startMilliseconds, b.startMilliseconds)
        result.endMilliseconds = latest(a.endMilliseconds, b.endMilliseconds)
        result.stoppedTimeMilliseconds = earliest(a.stoppedTimeMilliseconds, b.stoppedTimeMilliseconds)
        let revoked = earliest(a.revokedTimeMilliseconds, b.revokedTimeMilliseconds)
        result.revokedTimeMilliseconds = revoked
        result.revocationReason =
            revoked == nil
            ? nil : [a, b].filter { $0.revokedTimeMilliseconds == revoked }.compactMap(\.revocationReason).min()
        result.signedTimeMilliseconds = later.signedTimeMilliseconds
        return result
    }

    /// The periods of one Google purchase as access reads them, from every recorded order
    /// (one combined version per order and product, see `combined`): per product, orders in
    /// their sequence (the initial `GPA.…`, then renewals `..0`, `..1`, …), each starting no
    /// earlier than where the previous order's paid time ended (a renewal continues the paid
    /// time; Google gives no start of its own for a renewal), and ending where access stopped
    /// when that is sooner than its end; then joined as `accessPeriods` joins them, without
    /// clipping (add-ons run beside their base plan).
    public static func googleAccessPeriods(_ periods: [Period]) -> [Period] {
        var byProduct: [String: [Period]] = [:]
        for period in periods { byProduct[period.productID, default: []].append(period) }
        var ordered: [Period] = []
        for (_, orders) in byProduct {
            var previousEnd: Int64?
            for var period in orders.sorted(by: { ($0.orderSequence, $0.periodID) < ($1.orderSequence, $1.periodID) }) {
                period.endMilliseconds = period.paidEnd
                period.stoppedTimeMilliseconds = nil
                if let previousEnd, previousEnd > period.startMilliseconds {
                    period.startMilliseconds = min(previousEnd, period.endMilliseconds ?? previousEnd)
                }
                if let end = period.endMilliseconds { previousEnd = max(previousEnd ?? end, end) }
                ordered.append(period)
            }
        }
        // A revoked subscription (SUBSCRIPTION_REVOKED) loses access from then, whichever of its
        // orders was paying for that time.
        let revokedAt = ordered.lazy.filter { $0.revocationReason == subscriptionRevoked }
            .compactMap(\.revokedTimeMilliseconds).min()
        if let revokedAt {
            for index in ordered.indices where (ordered[index].endMilliseconds ?? Int64.max) > revokedAt {
                let revoked = ordered[index].revokedTimeMilliseconds ?? Int64.max
                if revokedAt < revoked {
                    ordered[index].revokedTimeMilliseconds = max(revokedAt, ordered[index].startMilliseconds)
                    ordered[index].revocationReason = subscriptionRevoked
                }
            }
        }
        return accessPeriods(ordered, clipsAtNextStart: false)
    }

    /// The revocation reason of a Google order revoked with its whole subscription (RTDN 12,
    /// SUBSCRIPTION_REVOKED), not a void of that order alone.
    public static let subscriptionRevoked = "SUBSCRIPTION_REVOKED"

    /// A Google order's place among the orders of one purchase: -1 for the initial order
    /// (`GPA.1234-5678-9012-34567`), N for the renewal `…..N`; the order id is what precedes a
    /// `/` in `periodID` (`/` and the product follow it).
    var orderSequence: Int {
        let order = Array((periodID.split(separator: "/", maxSplits: 1).first ?? "").utf8)
        var index = order.count - 1
        while index > 0 {
            if order[index] == UInt8(ascii: "."), order[index - 1] == UInt8(ascii: ".") {
                return Int(String(decoding: order[(index + 1)...], as: UTF8.self)) ?? -1
            }
            index -= 1
        }
        return -1
    }

    /// The period id of Google order `orderID` for line item `productID`: several line items
    /// (add-ons) share one order.
    public static func googlePeriodID(orderID: String, productID: String) -> String {
        "\(orderID)/\(productID)"
    }

    /// The order id of a Google period id.
    public var googleOrderID: String {
        String(periodID.split(separator: "/", maxSplits: 1).first ?? "")
    }

    private static func latest(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a else { return b }
        guard let b else { return a }
        return max(a, b)
    }

    private static func earliest(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }
}
