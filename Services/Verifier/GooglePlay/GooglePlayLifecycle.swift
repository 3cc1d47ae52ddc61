public import Foundation
public import Model

/// Google Play's lifecycle in the shared model: the state a `SubscriptionPurchaseV2` describes,
/// the event each Real-time Developer Notification is, and a one-time purchase's state.
///
/// Facts relied on (Play Developer API and RTDN reference, as summarized in STORES.md):
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
            storeTimeMilliseconds: storeTime, replacesStoreID: purchase.linkedPurchaseToken,
            storeAccountRef: purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId,
            bundleOrPackage: packageName, latestOrderID: item.latestSuccessfulOrderId ?? purchase.latestOrderId)
        if state == .gracePeriod { subscription.graceExpiresTimeMilliseconds = expires }
        if let next = item.deferredItemReplacement?.productId, next != productID {
            subscription.autoRenewProductID = next
        }
        return subscription
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
