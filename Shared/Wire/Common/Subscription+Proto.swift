internal import CProto
public import Model

/// `subscriptions.common.v1.Subscription`. Decoding requires `key`; a state number this version
/// does not know is `RPCError(.invalidArgument)` (`SubscriptionState` has no `unknown` case),
/// while unknown product kinds and ownerships are kept as `.unknown(number)`.
extension Subscription: ProtoMessage {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.common.v1.Subscription"

    /// Decodes a subscription; throws `RPCError(.invalidArgument)` for malformed bytes, a missing
    /// key or an enum value `Model` cannot hold.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension Subscription: CMessageConvertible {
    typealias CMessage = Subscriptions__Common__V1__Subscription

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__common__v1__subscription__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            key: ProtoField.requiredMessage(m.key, "key"),
            accountID: ProtoField.optionalString(m.account_id, "account_id"),
            productID: ProtoField.string(m.product_id, "product_id"),
            basePlanID: ProtoField.optionalString(m.base_plan_id, "base_plan_id"),
            offerID: ProtoField.optionalString(m.offer_id, "offer_id"),
            productKind: ProtoField.enumValue(m.product_kind.rawValue, "product_kind"),
            state: ProtoField.enumValue(m.state.rawValue, "state"),
            ownership: ProtoField.enumValue(m.ownership.rawValue, "ownership"),
            purchaseTimeMilliseconds: ProtoField.nonZero(m.purchase_time_ms),
            originalPurchaseTimeMilliseconds: ProtoField.nonZero(m.original_purchase_time_ms),
            expiresTimeMilliseconds: ProtoField.nonZero(m.expires_time_ms),
            graceExpiresTimeMilliseconds: ProtoField.nonZero(m.grace_expires_time_ms),
            revokedTimeMilliseconds: ProtoField.nonZero(m.revoked_time_ms),
            revocationReason: ProtoField.optionalString(m.revocation_reason, "revocation_reason"),
            autoRenew: m.auto_renew != 0,
            autoRenewProductID: ProtoField.optionalString(m.auto_renew_product_id, "auto_renew_product_id"),
            acknowledged: m.acknowledged != 0,
            storeTimeMilliseconds: ProtoField.nonZero(m.store_time_ms),
            verifiedTimeMilliseconds: ProtoField.nonZero(m.verified_time_ms),
            replacesStoreID: ProtoField.optionalString(m.replaces_store_id, "replaces_store_id"),
            replacedByStoreID: ProtoField.optionalString(m.replaced_by_store_id, "replaced_by_store_id"),
            storeAccountRef: ProtoField.optionalString(m.store_account_ref, "store_account_ref"),
            bundleOrPackage: ProtoField.string(m.bundle_or_package, "bundle_or_package"),
            latestOrderID: ProtoField.optionalString(m.latest_order_id, "latest_order_id"),
            periods: ProtoField.messages(m.periods, count: m.n_periods, "periods"),
            offerType: ProtoField.enumValue(m.offer_type.rawValue, "offer_type"),
            renewalOfferID: ProtoField.optionalString(m.renewal_offer_id, "renewal_offer_id"),
            renewalOfferType: ProtoField.enumValue(m.renewal_offer_type.rawValue, "renewal_offer_type"),
            expirationReason: ProtoField.enumValue(m.expiration_reason.rawValue, "expiration_reason"),
            inBillingRetry: m.in_billing_retry != 0,
            renewalTimeMilliseconds: ProtoField.nonZero(m.renewal_time_ms),
            storefront: ProtoField.optionalString(m.storefront, "storefront"),
            priceMicros: ProtoField.nonZero(m.price_micros),
            currency: ProtoField.optionalString(m.currency, "currency"),
            renewalOffProducts: ProtoField.strings(
                m.renewal_off_products, count: m.n_renewal_off_products, "renewal_off_products"),
            installmentsCommitted: m.installments_committed == 0 ? nil : m.installments_committed,
            installmentsRemaining: m.installments_committed == 0 ? nil : m.installments_remaining)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.key = key.cMessage(in: arena)
        arena.set(&c.account_id, accountID)
        arena.set(&c.product_id, productID)
        arena.set(&c.base_plan_id, basePlanID)
        arena.set(&c.offer_id, offerID)
        c.product_kind = .init(rawValue: ProtoField.number(productKind))
        c.state = .init(rawValue: ProtoField.number(state))
        c.ownership = .init(rawValue: ProtoField.number(ownership))
        c.purchase_time_ms = purchaseTimeMilliseconds ?? 0
        c.original_purchase_time_ms = originalPurchaseTimeMilliseconds ?? 0
        c.expires_time_ms = expiresTimeMilliseconds ?? 0
        c.grace_expires_time_ms = graceExpiresTimeMilliseconds ?? 0
        c.revoked_time_ms = revokedTimeMilliseconds ?? 0
        arena.set(&c.revocation_reason, revocationReason)
        c.auto_renew = autoRenew ? 1 : 0
        arena.set(&c.auto_renew_product_id, autoRenewProductID)
        c.acknowledged = acknowledged ? 1 : 0
        c.store_time_ms = storeTimeMilliseconds ?? 0
        c.verified_time_ms = verifiedTimeMilliseconds ?? 0
        arena.set(&c.replaces_store_id, replacesStoreID)
        arena.set(&c.replaced_by_store_id, replacedByStoreID)
        arena.set(&c.store_account_ref, storeAccountRef)
        arena.set(&c.bundle_or_package, bundleOrPackage)
        arena.set(&c.latest_order_id, latestOrderID)
        c.n_periods = periods.count
        c.periods = arena.messages(periods)
        c.offer_type = .init(rawValue: ProtoField.number(offerType))
        arena.set(&c.renewal_offer_id, renewalOfferID)
        c.renewal_offer_type = .init(rawValue: ProtoField.number(renewalOfferType))
        c.expiration_reason = .init(rawValue: ProtoField.number(expirationReason))
        c.in_billing_retry = inBillingRetry ? 1 : 0
        c.renewal_time_ms = renewalTimeMilliseconds ?? 0
        arena.set(&c.storefront, storefront)
        c.price_micros = priceMicros ?? 0
        arena.set(&c.currency, currency)
        c.n_renewal_off_products = renewalOffProducts.count
        c.renewal_off_products = arena.strings(renewalOffProducts)
        c.installments_committed = installmentsCommitted ?? 0
        c.installments_remaining = installmentsRemaining ?? 0
    }
}
