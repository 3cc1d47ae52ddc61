public import Foundation
public import Model

/// Google Play's lifecycle in the shared model: the state a `SubscriptionPurchaseV2` describes,
/// the event each Real-time Developer Notification is, and a one-time purchase's state.
///
/// Facts relied on (Play Developer API and RTDN reference, as summarized in docs/stores.md):
/// CANCELED means renewal is off and access lasts until `expiryTime`; IN_GRACE_PERIOD keeps
/// access until `expiryTime` (Google moves it to the end of grace); ON_HOLD and PAUSED mean no
/// access; a purchase replaced by an upgrade, downgrade or re-signup ends with
/// `replacementCancellation` and its replacement names it in `linkedPurchaseToken`; a revoked
/// or voided purchase loses access at the revocation (event) time.
public enum GooglePlayLifecycle {
    /// A purchase that cannot be normalized (no line item, no product, an unknown state).
    public struct Incomplete: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The subscription `purchase` describes, keyed by `token`. `storeTime` orders facts in
    /// the ledger (Google signs no time: the notification's event time, or when it was fetched);
    /// `now` decides a cancelled subscription whose period already ended.
    public static func subscription(
        _ purchase: SubscriptionPurchaseV2, token: String, packageName: String, storeTime: Int64, now: Date
    ) throws(Incomplete) -> Subscription {
        guard let items = purchase.lineItems, !items.isEmpty else {
            throw Incomplete(description: "the subscription has no line items")
        }
        // With add-ons there are several items; the one that runs longest carries access.
        let item = items.map { ($0, millis($0.expiryTime) ?? 0) }.max { $0.1 < $1.1 }!.0
        guard let productID = item.productId, !productID.isEmpty else {
            throw Incomplete(description: "the line item has no productId")
        }
        guard let stateName = purchase.subscriptionState, let mapped = state(stateName) else {
            throw Incomplete(
                description:
                    "subscriptionState \(purchase.subscriptionState ?? "(absent)") is not one this version knows")
        }
        let expires = millis(item.expiryTime)
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)
        var state = mapped
        if state == .cancelled, let expires, expires <= nowMilliseconds { state = .expired }
        let key = SubscriptionKey(
            store: .google, environment: purchase.testPurchase == nil ? .production : .sandbox, storeID: token)
        var subscription = Subscription(
            key: key, productID: productID, basePlanID: item.offerDetails?.basePlanId,
            offerID: item.offerDetails?.offerId,
            productKind: item.prepaidPlan != nil ? .nonRenewing : .autoRenewable, state: state, ownership: .purchased,
            purchaseTimeMilliseconds: millis(purchase.startTime),
            originalPurchaseTimeMilliseconds: millis(purchase.startTime),
            expiresTimeMilliseconds: expires, autoRenew: item.autoRenewingPlan?.autoRenewEnabled == true,
            acknowledged: purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
            storeTimeMilliseconds: storeTime, replacesStoreID: replaces(purchase),
            storeAccountRef: purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId,
            bundleOrPackage: packageName, latestOrderID: item.latestSuccessfulOrderId ?? purchase.latestOrderId)
        if state == .gracePeriod { subscription.graceExpiresTimeMilliseconds = expires }
        if state == .paused {
            subscription.autoResumeTimeMilliseconds = millis(purchase.pausedStateContext?.autoResumeTime)
        }
        subscription.storefront = purchase.regionCode
        if let price = item.autoRenewingPlan?.recurringPrice, let micros = price.micros,
            let currency = price.currencyCode
        {
            subscription.priceMicros = micros
            subscription.currency = currency
        }
        // Add-ons renew on their own: the ones that will not are named (the base plan's flag is
        // `autoRenew`).
        subscription.renewalOffProducts = Array(
            Set(
                items.filter {
                    $0 != item && $0.autoRenewingPlan != nil && $0.autoRenewingPlan?.autoRenewEnabled != true
                }
                .compactMap(\.productId)
            ).sorted().prefix(50))
        if let installments = item.autoRenewingPlan?.installmentDetails,
            let committed = installments.initialCommittedPaymentsCount, committed > 0
        {
            subscription.installmentsCommitted = Int32(clamping: committed)
            subscription.installmentsRemaining = Int32(clamping: installments.remainingCommittedPaymentsCount ?? 0)
        }
        if let next = item.deferredItemReplacement?.productId, next != productID {
            subscription.autoRenewProductID = next
        }
        return subscription
    }

    /// The token `purchase` replaced, once the replacement is real: a PENDING change (a slow
    /// payment method), or one whose payment was dropped (PENDING_PURCHASE_CANCELED), leaves the
    /// old token as it is.
    public static func replaces(_ purchase: SubscriptionPurchaseV2) -> String? {
        switch purchase.subscriptionState {
        case "SUBSCRIPTION_STATE_PENDING"?, "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"?: nil
        default: purchase.linkedPurchaseToken
        }
    }

    /// What happened to the purchase besides what the answer shows, from the notification that
    /// led to the fetch.
    public struct Circumstances: Sendable, Hashable {
        /// RTDN 12 (SUBSCRIPTION_REVOKED) at this time: the current order is revoked from then
        /// (or from its `expiryTime`, which Play moves to the revocation, when that is sooner).
        public var revokedAt: Int64?
        /// RTDN 1 (SUBSCRIPTION_RECOVERED, from account hold) at this time: the current order's
        /// paid time starts no earlier.
        public var recoveredAt: Int64?

        public init(revokedAt: Int64? = nil, recoveredAt: Int64? = nil) {
            self.revokedAt = revokedAt
            self.recoveredAt = recoveredAt
        }
    }

    /// The periods `purchase` proves: for each line item (a base plan and its add-ons share one
    /// order and billing period), its product's period for the order it names
    /// (`latestSuccessfulOrderId`), keyed `order/product`. Read while access is given (ACTIVE,
    /// CANCELED, IN_GRACE_PERIOD) the period ends at `expiryTime`; read once access has stopped
    /// (EXPIRED, ON_HOLD, PAUSED) `expiryTime` is only where it stopped. A pending purchase has
    /// no paid order and proves none. The start is `startTime` (a renewal's paid time continues
    /// the previous order's: the ledger works that out from the order sequence), or the
    /// recovery. `storeTime` orders versions of one order; `raw` is the answer as Google sent it.
    public static func periods(
        _ purchase: SubscriptionPurchaseV2, storeTime: Int64, circumstances: Circumstances = .init(),
        raw: String? = nil
    ) -> [Period] {
        let granting: Bool
        switch purchase.subscriptionState {
        case "SUBSCRIPTION_STATE_ACTIVE"?, "SUBSCRIPTION_STATE_CANCELED"?, "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"?:
            granting = true
        case "SUBSCRIPTION_STATE_EXPIRED"?, "SUBSCRIPTION_STATE_ON_HOLD"?, "SUBSCRIPTION_STATE_PAUSED"?:
            granting = false
        default:
            return []
        }
        let items = purchase.lineItems ?? []
        let start = millis(purchase.startTime)
        return items.compactMap { item -> Period? in
            guard let productID = item.productId, !productID.isEmpty, let expiry = millis(item.expiryTime),
                // Not the deprecated `latestOrderId`: an item without a successful order (a
                // deferred replacement's, before it takes effect) is not owned yet.
                let order = item.latestSuccessfulOrderId, !order.isEmpty
            else { return nil }
            var periodStart = min(start ?? expiry, expiry)
            if let recovered = circumstances.recoveredAt { periodStart = min(max(periodStart, recovered), expiry) }
            var period = Period(
                periodID: Period.googlePeriodID(orderID: order, productID: productID), productID: productID,
                basePlanID: item.offerDetails?.basePlanId, startMilliseconds: periodStart,
                endMilliseconds: granting ? expiry : nil, offerType: offerType(item.offerDetails),
                signedTimeMilliseconds: storeTime, productKind: item.prepaidPlan != nil ? .nonRenewing : .autoRenewable,
                raw: raw, stoppedTimeMilliseconds: granting ? nil : expiry)
            if let revoked = circumstances.revokedAt {
                period.revokedTimeMilliseconds = min(revoked, expiry)
                period.revocationReason = Period.subscriptionRevoked
            }
            return period
        }
    }

    /// A Google offer as an offer type: Play does not say which kind an offer is beyond its id
    /// and tags, so an offer is `promotional` (nil: the base plan's price).
    static func offerType(_ details: SubscriptionPurchaseV2.LineItem.OfferDetails?) -> OfferType? {
        guard let offerID = details?.offerId, !offerID.isEmpty else { return nil }
        return .promotional
    }

    /// The normalized state of a `subscriptionState`; nil for UNSPECIFIED or one this version
    /// does not know.
    public static func state(_ name: String) -> SubscriptionState? {
        switch name {
        case "SUBSCRIPTION_STATE_ACTIVE": .active
        case "SUBSCRIPTION_STATE_CANCELED": .cancelled
        case "SUBSCRIPTION_STATE_IN_GRACE_PERIOD": .gracePeriod
        case "SUBSCRIPTION_STATE_ON_HOLD": .accountHold
        case "SUBSCRIPTION_STATE_PAUSED": .paused
        case "SUBSCRIPTION_STATE_EXPIRED": .expired
        case "SUBSCRIPTION_STATE_PENDING": .pending
        case "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED": .expired
        default: nil
        }
    }

    /// The event a `subscriptionNotification.notificationType` is; codes Google adds later are
    /// `.other` (the raw code is recorded beside it).
    public static func eventKind(subscriptionNotificationType type: Int) -> EventKind {
        switch type {
        case 1: .billingRecovered
        case 2: .renewed
        case 3: .renewalDisabled
        case 4: .purchased
        case 5: .accountHold
        case 6: .gracePeriodStarted
        case 7: .renewalEnabled
        case 8, 19, 22: .priceChange
        case 9: .renewalExtended
        case 10: .paused
        case 11: .pauseScheduled
        case 12: .revoked
        case 13: .expired
        case 17: .productChanged
        case 18: .renewalDisabled
        case 20: .pendingCancelled
        default: .other
        }
    }

    /// A one-time product purchase, keyed by `token`: a non-consumable (a lifetime unlock)
    /// or a consumable, as the product is configured.
    public static func oneTimePurchase(
        _ purchase: ProductPurchase, token: String, packageName: String, productID: String, consumable: Bool,
        storeTime: Int64
    ) throws(Incomplete) -> Subscription {
        let state: SubscriptionState
        switch purchase.purchaseState {
        case 0?: state = .active
        case 1?: state = .revoked
        case 2?: state = .pending
        default:
            throw Incomplete(
                description: "purchaseState \(purchase.purchaseState.map(String.init) ?? "(absent)") is unknown")
        }
        return Subscription(
            key: SubscriptionKey(
                store: .google, environment: purchase.purchaseType == 0 ? .sandbox : .production, storeID: token),
            productID: productID, productKind: consumable ? .consumable : .nonConsumable, state: state,
            ownership: .purchased,
            purchaseTimeMilliseconds: purchase.purchaseTimeMillis.flatMap { Int64($0) },
            originalPurchaseTimeMilliseconds: purchase.purchaseTimeMillis.flatMap { Int64($0) }, autoRenew: false,
            acknowledged: purchase.acknowledgementState == 1, storeTimeMilliseconds: storeTime,
            storeAccountRef: purchase.obfuscatedExternalAccountId, bundleOrPackage: packageName,
            latestOrderID: purchase.orderId)
    }

    /// The period a one-time purchase proves: from its purchase time, with no end (a lifetime
    /// unlock; a consumable grants nothing lasting), keyed `order/product`; revoked from
    /// `storeTime` when Google reads it canceled (a void names its own time, which is sooner).
    public static func oneTimePeriod(
        _ purchase: ProductPurchase, productID: String, consumable: Bool, storeTime: Int64, raw: String? = nil
    ) -> Period? {
        guard let order = purchase.orderId, !order.isEmpty, purchase.purchaseState != 2,
            let bought = purchase.purchaseTimeMillis.flatMap({ Int64($0) })
        else { return nil }
        return Period(
            periodID: Period.googlePeriodID(orderID: order, productID: productID), productID: productID,
            startMilliseconds: bought, revokedTimeMilliseconds: purchase.purchaseState == 1 ? storeTime : nil,
            revocationReason: purchase.purchaseState == 1 ? "PURCHASE_CANCELED" : nil,
            signedTimeMilliseconds: storeTime,
            productKind: consumable ? .consumable : .nonConsumable, raw: raw)
    }

    /// Milliseconds since the epoch of an RFC 3339 time as Google writes it
    /// ("2025-10-10T02:56:07.125Z", fractional seconds optional).
    public static func millis(_ text: String?) -> Int64? {
        guard let text, let date = (try? withFraction.parse(text)) ?? (try? plain.parse(text)) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// Made once: parsing runs for every line item of every purchase read.
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let plain = Date.ISO8601FormatStyle()
}
