/// The decoded payload of a signed transaction (`JWSTransactionDecodedPayload`). Every field is
/// optional: Apple leaves out what does not apply, and fields it adds later are ignored here
/// (the raw payload is kept for audit). Times are Unix epoch milliseconds.
public struct AppleTransaction: Sendable, Hashable, Decodable {
    public var transactionId: String?
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int?
    /// "Auto-Renewable Subscription", "Non-Consumable", "Consumable", "Non-Renewing Subscription".
    public var type: String?
    public var appAccountToken: String?
    /// "PURCHASED" or "FAMILY_SHARED".
    public var inAppOwnershipType: String?
    public var signedDate: Int64?
    /// 0: another reason, 1: an issue in the app.
    public var revocationReason: Int?
    public var revocationDate: Int64?
    public var isUpgraded: Bool?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var environment: String?
    public var storefront: String?
    public var storefrontId: String?
    /// "PURCHASE" or "RENEWAL".
    public var transactionReason: String?
    public var currency: String?
    /// The price in milli-units of `currency`.
    public var price: Int64?
    public var offerDiscountType: String?
    public var appTransactionId: String?
    public var offerPeriod: String?

    public init() {}
}

/// The decoded payload of signed renewal info (`JWSRenewalInfoDecodedPayload`).
public struct AppleRenewalInfo: Sendable, Hashable, Decodable {
    public var originalTransactionId: String?
    public var productId: String?
    public var autoRenewProductId: String?
    /// 1: renews, 0: renewal turned off.
    public var autoRenewStatus: Int?
    /// 1 cancelled, 2 billing error, 3 declined a price increase, 4 not for sale, 5 other.
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Int64?
    public var priceIncreaseStatus: Int?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var signedDate: Int64?
    public var environment: String?
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    public var renewalPrice: Int64?
    public var offerDiscountType: String?
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    public var offerPeriod: String?

    public init() {}
}

/// A decoded App Store Server Notification V2 (`responseBodyV2DecodedPayload`). Exactly one of
/// `data`, `summary`, `externalPurchaseToken` and `appData` is normally present.
public struct AppleNotification: Sendable, Hashable, Decodable {
    public var notificationType: AppleNotificationType
    public var subtype: AppleNotificationSubtype?
    public var notificationUUID: String
    public var version: String?
    /// Absent in some early notifications.
    public var signedDate: Int64?
    public var data: NotificationData?
    public var summary: Summary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: AppData?

    /// `data`: the app, its environment, and the still-signed transaction and renewal info.
    public struct NotificationData: Sendable, Hashable, Decodable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int?
        public var consumptionRequestReason: String?
    }

    /// `summary` of a RENEWAL_EXTENSION request for many subscribers.
    public struct Summary: Sendable, Hashable, Decodable {
        public var environment: String?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var productId: String?
        public var requestIdentifier: String?
        public var storefrontCountryCodes: [String]?
        public var succeededCount: Int64?
        public var failedCount: Int64?
    }

    /// `externalPurchaseToken` of an EXTERNAL_PURCHASE_TOKEN notification.
    public struct ExternalPurchaseToken: Sendable, Hashable, Decodable {
        public var externalPurchaseId: String?
        public var tokenCreationDate: Int64?
        public var appAppleId: Int64?
        public var bundleId: String?
    }

    /// `appData`, sent with notifications about the app rather than one purchase.
    public struct AppData: Sendable, Hashable, Decodable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: String?
        public var signedAppTransactionInfo: String?
    }

    /// The app and environment the notification speaks for, wherever Apple put them. An
    /// external purchase token carries no environment: its id starts with "SANDBOX" in Sandbox.
    var claims: (bundleID: String?, environment: String?, appAppleID: Int64?) {
        if let data { return (data.bundleId, data.environment, data.appAppleId) }
        if let summary { return (summary.bundleId, summary.environment, summary.appAppleId) }
        if let appData { return (appData.bundleId, appData.environment, appData.appAppleId) }
        if let token = externalPurchaseToken {
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            return (token.bundleId, sandbox ? "Sandbox" : "Production", token.appAppleId)
        }
        return (nil, nil, nil)
    }
}
