public import Foundation
public import Model

/// Apple's lifecycle in the shared model: which event a notification is, and which state a
/// subscription is in given its latest transaction, renewal info and status.
///
/// Facts relied on (App Store Server API and Notifications V2 documentation, as summarized in
/// docs/stores.md): `status` 1 active, 2 expired, 3 billing retry, 4 billing grace period,
/// 5 revoked; `autoRenewStatus` 0 means renewal is off but the paid period still counts; a
/// `revocationDate` ends access from that instant; `inAppOwnershipType` FAMILY_SHARED is
/// access shared by the purchaser, until REVOKE; an upgrade takes effect at once (the replaced
/// transaction carries `isUpgraded`), a downgrade or crossgrade at the next renewal
/// (`autoRenewProductId` differs from `productId`).
public enum AppleLifecycle {
    /// The normalized event of a notification type and subtype. Types Apple adds later are
    /// `.other` (the raw type is recorded beside it).
    public static func eventKind(type: AppleNotificationType, subtype: AppleNotificationSubtype?) -> EventKind {
        switch type {
        case .subscribed: return .purchased
        case .didRenew: return subtype == .billingRecovery ? .billingRecovered : .renewed
        case .didChangeRenewalStatus: return subtype == .autoRenewEnabled ? .renewalEnabled : .renewalDisabled
        case .didChangeRenewalPref:
            // UPGRADE applies now; DOWNGRADE, a crossgrade or a cancelled downgrade (no
            // subtype) changes what renews next.
            return subtype == .upgrade ? .productChanged : .productChangeScheduled
        case .offerRedeemed:
            switch subtype {
            case .initialBuy?, .resubscribe?: return .purchased
            case .upgrade?: return .productChanged
            case .downgrade?: return .productChangeScheduled
            default: return .renewed
            }
        case .expired: return .expired
        case .didFailToRenew: return subtype == .gracePeriod ? .gracePeriodStarted : .billingFailed
        case .gracePeriodExpired: return .billingFailed
        case .priceIncrease, .priceChange: return .priceChange
        case .refund: return .refunded
        case .refundDeclined: return .refundDeclined
        case .refundReversed: return .refundReversed
        case .consumptionRequest: return .consumptionRequest
        case .renewalExtended, .renewalExtension: return .renewalExtended
        case .revoke: return .revoked
        case .test: return .test
        case .oneTimeCharge: return .purchased
        default: return .other
        }
    }

    /// The product kind from a transaction's `type`.
    public static func productKind(_ type: String?) -> ProductKind? {
        switch type {
        case "Auto-Renewable Subscription": .autoRenewable
        case "Non-Renewing Subscription": .nonRenewing
        case "Non-Consumable": .nonConsumable
        case "Consumable": .consumable
        default: nil
        }
    }

    /// A transaction that cannot be normalized (no ids, no product).
    public struct Incomplete: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The subscription (or one-time purchase) a verified transaction describes, keyed by its
    /// `originalTransactionId`. `status` comes from Get All Subscription Statuses or a
    /// notification's `data.status`; without it the state follows from the dates at `now`.
    /// `storeTime` is the newest `signedDate` among the inputs (and `notificationSignedDate`),
    /// the order the ledger applies states in.
    public static func subscription(
        transaction: AppleTransaction, renewalInfo: AppleRenewalInfo?, status: Int?, now: Date,
        notificationSignedDate: Int64? = nil
    ) throws(Incomplete) -> Subscription {
        guard let transactionID = transaction.transactionId, !transactionID.isEmpty else {
            throw Incomplete(description: "the transaction has no transactionId")
        }
        guard let productID = transaction.productId, !productID.isEmpty else {
            throw Incomplete(description: "the transaction has no productId")
        }
        let environment: StoreEnvironment =
            transaction.environment == AppleEnvironment.production.rawValue ? .production : .sandbox
        let key = SubscriptionKey(
            store: .apple, environment: environment, storeID: transaction.originalTransactionId ?? transactionID)
        let kind = productKind(transaction.type)
        let autoRenew = kind == .autoRenewable && renewalInfo?.autoRenewStatus == 1
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)
        var subscription = Subscription(
            key: key, productID: productID, basePlanID: transaction.subscriptionGroupIdentifier,
            offerID: transaction.offerIdentifier, productKind: kind,
            ownership: transaction.inAppOwnershipType == "FAMILY_SHARED" ? .familyShared : .purchased,
            purchaseTimeMilliseconds: transaction.purchaseDate,
            originalPurchaseTimeMilliseconds: transaction.originalPurchaseDate,
            expiresTimeMilliseconds: transaction.expiresDate, autoRenew: autoRenew, acknowledged: true,
            storeTimeMilliseconds: [transaction.signedDate, renewalInfo?.signedDate, notificationSignedDate]
                .compactMap { $0 }.max(),
            storeAccountRef: transaction.appAccountToken, bundleOrPackage: transaction.bundleId ?? "",
            latestOrderID: transactionID)
        if let next = renewalInfo?.autoRenewProductId, next != productID { subscription.autoRenewProductID = next }
        subscription.offerType = offerType(transaction.offerType, discount: transaction.offerDiscountType)
        subscription.renewalOfferID = renewalInfo?.offerIdentifier
        subscription.renewalOfferType = offerType(renewalInfo?.offerType, discount: renewalInfo?.offerDiscountType)
        subscription.expirationReason = expirationReason(renewalInfo?.expirationIntent)
        subscription.inBillingRetry = renewalInfo?.isInBillingRetryPeriod == true
        if autoRenew { subscription.renewalTimeMilliseconds = renewalInfo?.renewalDate ?? transaction.expiresDate }
        subscription.storefront = transaction.storefront
        subscription.priceMicros = transaction.price.map { $0 &* 1000 }
        subscription.currency = transaction.currency
        if let revoked = transaction.revocationDate {
            subscription.state = .revoked
            subscription.revokedTimeMilliseconds = revoked
            subscription.revocationReason = transaction.revocationReason.map { String($0) }
            return subscription
        }
        if transaction.isUpgraded == true {
            // An upgrade replaced this transaction's product at once.
            subscription.state = .expired
            return subscription
        }
        let grace = renewalInfo?.gracePeriodExpiresDate
        switch status {
        case 1?: subscription.state = autoRenew || kind != .autoRenewable ? .active : .cancelled
        case 2?: subscription.state = .expired
        case 3?: subscription.state = .billingRetry
        case 4?:
            subscription.state = .gracePeriod
            subscription.graceExpiresTimeMilliseconds = grace
        case 5?: subscription.state = .revoked
        default:
            subscription.state = derivedState(
                kind: kind, expires: transaction.expiresDate, autoRenew: autoRenew,
                inBillingRetry: renewalInfo?.isInBillingRetryPeriod == true, grace: grace, now: nowMilliseconds)
            if subscription.state == .gracePeriod { subscription.graceExpiresTimeMilliseconds = grace }
        }
        return subscription
    }

    /// The period a verified transaction proves, with its signed form `raw` for audit; nil for a
    /// consumable (no lasting time) or a transaction without ids, product or purchase date.
    ///
    /// The period runs from `purchaseDate` (for a renewal, the previous period's end, even when
    /// Apple charged it up to a day earlier) to `expiresDate`; a non-renewing subscription and a
    /// non-consumable have none (the policy gives a non-renewing product's duration). A
    /// `revocationDate` revokes this period only. A transaction that an upgrade replaced
    /// (`isUpgraded`) ends where the upgrade's transaction starts: the ledger cuts every period
    /// of a chain at the start of the next one that begins inside it.
    public static func period(_ transaction: AppleTransaction, raw: String?) -> Period? {
        guard let id = transaction.transactionId, !id.isEmpty, let productID = transaction.productId,
            !productID.isEmpty, let start = transaction.purchaseDate, start > 0
        else { return nil }
        let kind = productKind(transaction.type)
        if kind == .consumable { return nil }
        var end = transaction.expiresDate
        if kind == .nonRenewing || kind == .nonConsumable { end = nil }
        if let known = end, known < start { end = start }
        return Period(
            periodID: id, productID: productID, basePlanID: transaction.subscriptionGroupIdentifier,
            startMilliseconds: start, endMilliseconds: end,
            offerType: offerType(transaction.offerType, discount: transaction.offerDiscountType),
            revokedTimeMilliseconds: transaction.revocationDate,
            revocationReason: transaction.revocationDate == nil ? nil : transaction.revocationReason.map { String($0) },
            signedTimeMilliseconds: transaction.signedDate, productKind: kind, raw: raw)
    }

    /// Apple `offerType` (1 introductory, 2 promotional, 3 offer code, 4 win-back) with
    /// `offerDiscountType` (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`) in the shared model.
    public static func offerType(_ type: Int?, discount: String?) -> OfferType? {
        if discount == "FREE_TRIAL" { return .freeTrial }
        switch type {
        case nil: return nil
        case 1?: return .introductory
        case 2?: return .promotional
        case 3?: return .offerCode
        case 4?: return .winBack
        default: return nil  // a type this version does not know: not mapped
        }
    }

    /// Apple `expirationIntent` (1 cancelled, 2 billing error, 3 price increase declined,
    /// 4 product unavailable, 5 other) in the shared model.
    public static func expirationReason(_ intent: Int?) -> ExpirationReason? {
        switch intent {
        case nil: nil
        case 1?: .cancelled
        case 2?: .billingError
        case 3?: .priceIncrease
        case 4?: .productUnavailable
        default: .other
        }
    }

    /// The state from dates alone, for data without a status.
    static func derivedState(
        kind: ProductKind?, expires: Int64?, autoRenew: Bool, inBillingRetry: Bool, grace: Int64?, now: Int64
    ) -> SubscriptionState {
        switch kind {
        case .nonConsumable?, .consumable?: return .active
        case .nonRenewing?: return (expires ?? Int64.max) > now ? .active : .expired
        default: break
        }
        if let expires, expires > now { return autoRenew ? .active : .cancelled }
        if inBillingRetry { return (grace ?? Int64.min) > now ? .gracePeriod : .billingRetry }
        return .expired
    }
}
