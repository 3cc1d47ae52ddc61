public import Model

extension GrantRenewal {
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
            installmentsRemaining: subscription.installmentsCommitted == nil ? nil : subscription.installmentsRemaining)
    }
}
