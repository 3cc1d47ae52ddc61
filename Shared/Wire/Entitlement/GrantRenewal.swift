internal import CProto
public import Model

/// `subscriptions.entitlement.v1.Renewal`: what a client shows about a subscription's renewal,
/// the same for both stores (the fields of the same names in `Subscription`).
public struct GrantRenewal: Sendable, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.Renewal"

    public var autoRenew: Bool
    /// The product the next renewal switches to (a pending upgrade, downgrade or crossgrade).
    public var autoRenewProductID: String?
    public var expirationReason: ExpirationReason?
    public var graceExpiresTimeMilliseconds: Int64?
    public var inBillingRetry: Bool
    public var renewalTimeMilliseconds: Int64?
    public var renewalOfferID: String?
    public var renewalOfferType: OfferType?
    /// The offer the current period was bought under.
    public var offerType: OfferType?
    public var storefront: String?
    public var priceMicros: Int64?
    public var currency: String?
    /// A Google installment plan: payments committed to, and how many remain.
    public var installmentsCommitted: Int32?
    public var installmentsRemaining: Int32?

    public init(
        autoRenew: Bool = false, autoRenewProductID: String? = nil, expirationReason: ExpirationReason? = nil,
        graceExpiresTimeMilliseconds: Int64? = nil, inBillingRetry: Bool = false,
        renewalTimeMilliseconds: Int64? = nil, renewalOfferID: String? = nil, renewalOfferType: OfferType? = nil,
        offerType: OfferType? = nil, storefront: String? = nil, priceMicros: Int64? = nil, currency: String? = nil,
        installmentsCommitted: Int32? = nil, installmentsRemaining: Int32? = nil
    ) {
        self.autoRenew = autoRenew
        self.autoRenewProductID = autoRenewProductID
        self.expirationReason = expirationReason
        self.graceExpiresTimeMilliseconds = graceExpiresTimeMilliseconds
        self.inBillingRetry = inBillingRetry
        self.renewalTimeMilliseconds = renewalTimeMilliseconds
        self.renewalOfferID = renewalOfferID
        self.renewalOfferType = renewalOfferType
        self.offerType = offerType
        self.storefront = storefront
        self.priceMicros = priceMicros
        self.currency = currency
        self.installmentsCommitted = installmentsCommitted
        self.installmentsRemaining = installmentsRemaining
    }

    /// The renewal fields of `subscription`.
    public init(_ subscription: Subscription) {
        self.init(
            autoRenew: subscription.autoRenew, autoRenewProductID: subscription.autoRenewProductID,
            expirationReason: subscription.expirationReason,
            graceExpiresTimeMilliseconds: subscription.graceExpiresTimeMilliseconds,
            inBillingRetry: subscription.inBillingRetry, renewalTimeMilliseconds: subscription.renewalTimeMilliseconds,
            renewalOfferID: subscription.renewalOfferID, renewalOfferType: subscription.renewalOfferType,
            offerType: subscription.offerType, storefront: subscription.storefront,
            priceMicros: subscription.priceMicros, currency: subscription.currency,
            installmentsCommitted: subscription.installmentsCommitted,
            installmentsRemaining: subscription.installmentsRemaining)
    }
}

extension GrantRenewal: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__Renewal

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__renewal__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            autoRenew: m.auto_renew != 0,
            autoRenewProductID: ProtoField.optionalString(m.auto_renew_product_id, "auto_renew_product_id"),
            expirationReason: ProtoField.enumValue(m.expiration_reason.rawValue, "expiration_reason"),
            graceExpiresTimeMilliseconds: ProtoField.nonZero(m.grace_expires_time_ms),
            inBillingRetry: m.in_billing_retry != 0, renewalTimeMilliseconds: ProtoField.nonZero(m.renewal_time_ms),
            renewalOfferID: ProtoField.optionalString(m.renewal_offer_id, "renewal_offer_id"),
            renewalOfferType: ProtoField.enumValue(m.renewal_offer_type.rawValue, "renewal_offer_type"),
            offerType: ProtoField.enumValue(m.offer_type.rawValue, "offer_type"),
            storefront: ProtoField.optionalString(m.storefront, "storefront"),
            priceMicros: ProtoField.nonZero(m.price_micros),
            currency: ProtoField.optionalString(m.currency, "currency"),
            installmentsCommitted: m.installments_committed == 0 ? nil : m.installments_committed,
            installmentsRemaining: m.installments_committed == 0 ? nil : m.installments_remaining)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.auto_renew = autoRenew ? 1 : 0
        arena.set(&c.auto_renew_product_id, autoRenewProductID)
        c.expiration_reason = .init(rawValue: ProtoField.number(expirationReason))
        c.grace_expires_time_ms = graceExpiresTimeMilliseconds ?? 0
        c.in_billing_retry = inBillingRetry ? 1 : 0
        c.renewal_time_ms = renewalTimeMilliseconds ?? 0
        arena.set(&c.renewal_offer_id, renewalOfferID)
        c.renewal_offer_type = .init(rawValue: ProtoField.number(renewalOfferType))
        c.offer_type = .init(rawValue: ProtoField.number(offerType))
        arena.set(&c.storefront, storefront)
        c.price_micros = priceMicros ?? 0
        arena.set(&c.currency, currency)
        c.installments_committed = installmentsCommitted ?? 0
        c.installments_remaining = installmentsRemaining ?? 0
    }
}
