/// The current verified state of one store subscription or one-time purchase, normalized so
/// both stores look the same. Mirrors `subscriptions.common.v1.Subscription` field by field.
///
/// Absent values are `nil`, never a placeholder:
/// - Times are Unix epoch milliseconds (negative before 1970). `nil` means absent, which the
///   wire writes as 0, so the instant 0 itself cannot be held; a 0 read from the wire is `nil`.
/// - Optional strings are ids and references that may be missing. `nil` means absent, which the
///   wire writes as the empty string; set `nil`, not `""` (an empty string comes back as `nil`).
/// - Enum fields are `nil` for the proto's `…_UNSPECIFIED` value.
public struct Subscription: Sendable, Hashable {
    /// Which store subscription or purchase this is.
    public var key: SubscriptionKey
    /// The app account that owns it; `nil` while unlinked.
    public var accountID: String?
    /// The store's product id.
    public var productID: String
    /// Google base plan; Apple subscription group.
    public var basePlanID: String?
    /// Google offer; Apple offer identifier.
    public var offerID: String?
    /// Subscription or one-time product, and which kind.
    public var productKind: ProductKind?
    /// The normalized lifecycle state; `nil` for unspecified.
    public var state: SubscriptionState?
    /// Bought by the account, or shared with it by a family member.
    public var ownership: Ownership?
    /// When it was purchased, as the store reports it.
    public var purchaseTimeMilliseconds: Int64?
    /// The first purchase of the subscription.
    public var originalPurchaseTimeMilliseconds: Int64?
    /// End of the paid period; access under `.active` and `.cancelled` ends here.
    public var expiresTimeMilliseconds: Int64?
    /// End of the billing grace period, when in one.
    public var graceExpiresTimeMilliseconds: Int64?
    /// When the store revoked or refunded it.
    public var revokedTimeMilliseconds: Int64?
    /// The store's reason for the revocation, verbatim.
    public var revocationReason: String?
    /// Whether the subscription renews at the end of the period.
    public var autoRenew: Bool
    /// The product the next renewal switches to (a pending downgrade), when different.
    public var autoRenewProductID: String?
    /// Whether the purchase has been acknowledged with the store (Google).
    public var acknowledged: Bool
    /// The store's time of the newest fact applied to this state.
    public var storeTimeMilliseconds: Int64?
    /// When this backend last verified it with the store.
    public var verifiedTimeMilliseconds: Int64?
    /// Google `linkedPurchaseToken`: the store id this one replaced.
    public var replacesStoreID: String?
    /// Set when a newer token or transaction replaced this one.
    public var replacedByStoreID: String?
    /// Apple `appAccountToken` or Google `obfuscatedExternalAccountId`, as the store reported it.
    public var storeAccountRef: String?
    /// Apple bundle id or Google package name.
    public var bundleOrPackage: String
    /// Apple latest `transactionId`, Google `latestSuccessfulOrderId`.
    public var latestOrderID: String?
    /// The verified periods as access reads them (`Period.accessPeriods`); set by the ledger,
    /// ignored in requests.
    public var periods: [Period]
    /// The offer the current period was bought under; `nil` for the regular price.
    public var offerType: OfferType?
    /// The offer the next renewal is charged under.
    public var renewalOfferID: String?
    public var renewalOfferType: OfferType?
    /// Why it ended or will end, when the store says.
    public var expirationReason: ExpirationReason?
    /// The store is retrying a failed renewal.
    public var inBillingRetry: Bool
    /// When the next renewal is due, while renewal is on.
    public var renewalTimeMilliseconds: Int64?
    /// Apple storefront (ISO 3166-1 alpha-3), Google region code.
    public var storefront: String?
    /// The current period's price in millionths of `currency`.
    public var priceMicros: Int64?
    /// ISO 4217 currency code of `priceMicros`.
    public var currency: String?
    /// Google: line items (add-ons) whose renewal is off, by product id; `autoRenew` is the base
    /// plan's.
    public var renewalOffProducts: [String]
    /// Google installment plan: payments committed to in the current commitment (`nil` for no
    /// installment plan), and how many of them remain (0 once the last is paid).
    public var installmentsCommitted: Int32?
    public var installmentsRemaining: Int32
    /// The states that passed or are passing (grace, billing retry, hold, pause) as intervals,
    /// set by the ledger from every state it recorded; ordered by start.
    public var statusIntervals: [StatusInterval]
    /// Google `pausedStateContext.autoResumeTime`: when a paused subscription resumes by itself.
    public var autoResumeTimeMilliseconds: Int64?

    /// A subscription state; every field but `key` defaults to absent, false or empty.
    public init(
        key: SubscriptionKey, accountID: String? = nil, productID: String = "", basePlanID: String? = nil,
        offerID: String? = nil, productKind: ProductKind? = nil, state: SubscriptionState? = nil,
        ownership: Ownership? = nil, purchaseTimeMilliseconds: Int64? = nil,
        originalPurchaseTimeMilliseconds: Int64? = nil, expiresTimeMilliseconds: Int64? = nil,
        graceExpiresTimeMilliseconds: Int64? = nil, revokedTimeMilliseconds: Int64? = nil,
        revocationReason: String? = nil, autoRenew: Bool = false, autoRenewProductID: String? = nil,
        acknowledged: Bool = false, storeTimeMilliseconds: Int64? = nil, verifiedTimeMilliseconds: Int64? = nil,
        replacesStoreID: String? = nil, replacedByStoreID: String? = nil, storeAccountRef: String? = nil,
        bundleOrPackage: String = "", latestOrderID: String? = nil, periods: [Period] = [],
        offerType: OfferType? = nil, renewalOfferID: String? = nil, renewalOfferType: OfferType? = nil,
        expirationReason: ExpirationReason? = nil, inBillingRetry: Bool = false, renewalTimeMilliseconds: Int64? = nil,
        storefront: String? = nil, priceMicros: Int64? = nil, currency: String? = nil,
        renewalOffProducts: [String] = [], installmentsCommitted: Int32? = nil, installmentsRemaining: Int32 = 0,
        statusIntervals: [StatusInterval] = [], autoResumeTimeMilliseconds: Int64? = nil
    ) {
        self.key = key
        self.accountID = accountID
        self.productID = productID
        self.basePlanID = basePlanID
        self.offerID = offerID
        self.productKind = productKind
        self.state = state
        self.ownership = ownership
        self.purchaseTimeMilliseconds = purchaseTimeMilliseconds
        self.originalPurchaseTimeMilliseconds = originalPurchaseTimeMilliseconds
        self.expiresTimeMilliseconds = expiresTimeMilliseconds
        self.graceExpiresTimeMilliseconds = graceExpiresTimeMilliseconds
        self.revokedTimeMilliseconds = revokedTimeMilliseconds
        self.revocationReason = revocationReason
        self.autoRenew = autoRenew
        self.autoRenewProductID = autoRenewProductID
        self.acknowledged = acknowledged
        self.storeTimeMilliseconds = storeTimeMilliseconds
        self.verifiedTimeMilliseconds = verifiedTimeMilliseconds
        self.replacesStoreID = replacesStoreID
        self.replacedByStoreID = replacedByStoreID
        self.storeAccountRef = storeAccountRef
        self.bundleOrPackage = bundleOrPackage
        self.latestOrderID = latestOrderID
        self.periods = periods
        self.offerType = offerType
        self.renewalOfferID = renewalOfferID
        self.renewalOfferType = renewalOfferType
        self.expirationReason = expirationReason
        self.inBillingRetry = inBillingRetry
        self.renewalTimeMilliseconds = renewalTimeMilliseconds
        self.storefront = storefront
        self.priceMicros = priceMicros
        self.currency = currency
        self.renewalOffProducts = renewalOffProducts
        self.installmentsCommitted = installmentsCommitted
        self.installmentsRemaining = installmentsRemaining
        self.statusIntervals = statusIntervals
        self.autoResumeTimeMilliseconds = autoResumeTimeMilliseconds
    }
}
