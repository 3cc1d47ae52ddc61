/// One verified stretch of paid time: an Apple transaction, a Google order. Mirrors
/// `subscriptions.common.v1.Period`. Absent values are `nil` (the wire's 0 or empty string).
///
/// Periods are facts: the same period recorded twice is one period; a revocation ends that
/// period only; a later state never erases a period.
public struct Period: Sendable, Hashable {
    /// Apple `transactionId`; Google `orderId`.
    public var periodID: String
    public var productID: String
    /// Google base plan; Apple subscription group.
    public var basePlanID: String?
    /// The start of the paid time (for an Apple renewal, the previous period's end).
    public var startMilliseconds: Int64
    /// The end; `nil` for no end of its own (a lifetime purchase, or a non-renewing
    /// subscription whose duration the entitlement policy gives).
    public var endMilliseconds: Int64?
    public var offerType: OfferType?
    /// When the store revoked or refunded this period.
    public var revokedTimeMilliseconds: Int64?
    public var revocationReason: String?
    /// The store's signed time of the data it came from; the later-signed version of a period wins.
    public var signedTimeMilliseconds: Int64?
    public var productKind: ProductKind?
    /// The signed store data it came from (Apple `signedTransactionInfo`, Google's
    /// subscriptionsv2 answer), for audit.
    public var raw: String?
    /// Google: the earliest end a version of this order showed once access had stopped (read
    /// while expired, on hold or paused); access from it ends no later.
    public var stoppedTimeMilliseconds: Int64?

    /// A period; the optional fields default to absent.
    public init(
        periodID: String, productID: String, basePlanID: String? = nil, startMilliseconds: Int64,
        endMilliseconds: Int64? = nil, offerType: OfferType? = nil, revokedTimeMilliseconds: Int64? = nil,
        revocationReason: String? = nil, signedTimeMilliseconds: Int64? = nil, productKind: ProductKind? = nil,
        raw: String? = nil, stoppedTimeMilliseconds: Int64? = nil
    ) {
        self.periodID = periodID
        self.productID = productID
        self.basePlanID = basePlanID
        self.startMilliseconds = startMilliseconds
        self.endMilliseconds = endMilliseconds
        self.offerType = offerType
        self.revokedTimeMilliseconds = revokedTimeMilliseconds
        self.revocationReason = revocationReason
        self.signedTimeMilliseconds = signedTimeMilliseconds
        self.productKind = productKind
        self.raw = raw
        self.stoppedTimeMilliseconds = stoppedTimeMilliseconds
    }
}
