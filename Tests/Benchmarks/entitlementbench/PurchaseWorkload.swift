import Foundation
import Model
import Wire

/// What the benchmark's accounts own: one active subscription each to the `pro` capability,
/// half bought on the App Store (numeric originalTransactionId keys), half on Google Play
/// (purchase tokens of the length Play issues), with the fields a verified state carries.
struct PurchaseWorkload {
    static let capability = "pro"
    static let appleProduct = "com.example.pro.monthly"
    static let googleProduct = "pro_subscription"
    static let bundle = "com.example.app"
    static let checkMethod = "subscriptions.entitlement.v1.Entitlement/CheckAccess"
    static let recordMethod = "subscriptions.ledger.v1.Ledger/RecordVerifiedState"
    static let linkMethod = "subscriptions.ledger.v1.Ledger/LinkAccount"

    /// The policy file: `pro` granted by one App Store and one Play product.
    static let policy = """
        # entitlementbench: one capability, granted by an App Store product and a Play product
        capability \(capability)
          apple \(appleProduct)
          google \(googleProduct)

        """

    private static let lowercase = Array("abcdefghijklmnopqrstuvwxyz".utf8)
    private static let base64URL = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let day: Int64 = 86_400_000

    /// The time everything is relative to (ms since 1970).
    let now: Int64

    init(now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) { self.now = now }

    /// The subscription of seeded account number `index` (from 0), linked to `accountID`:
    /// bought in the last 30 days, active, ending 1 to 365 days from now. Even indexes are App
    /// Store purchases, odd ones Play purchases.
    func seeded(index: Int, accountID: String, random: inout FastRandom) -> Subscription {
        let purchased = now - Int64(random.next() % UInt64(30 * Self.day))
        let expires = now + Self.day + Int64(random.next() % UInt64(364 * Self.day))
        if index % 2 == 0 {
            // Apple's originalTransactionId: a 16-digit number.
            let storeID = String(2_000_000_000_000_000 + index)
            return apple(
                storeID: storeID, accountID: accountID, purchased: purchased, expires: expires,
                orderID: String(2_000_000_000_000_000 + index + 7_000_000), appAccountToken: random.uuidString())
        }
        return google(
            token: Self.purchaseToken(&random), accountID: accountID, purchased: purchased, expires: expires,
            orderID: "GPA.\(3300 + index % 100)-\(1000 + index % 9000)-\(index % 10000)-\(10000 + index % 90000)",
            obfuscatedAccount: random.text(count: 32, from: Self.base64URL))
    }

    /// A Play purchase token: 24 lowercase letters, a dot, then 125 URL-safe base64 characters
    /// starting "AO-J1O" (150 in all, the length tokens have).
    static func purchaseToken(_ random: inout FastRandom) -> String {
        random.text(count: 24, from: lowercase) + ".AO-J1O" + random.text(count: 119, from: base64URL)
    }

    func apple(
        storeID: String, accountID: String?, purchased: Int64, expires: Int64, orderID: String,
        appAccountToken: String
    ) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: storeID), accountID: accountID,
            productID: Self.appleProduct, productKind: .autoRenewable, state: .active, ownership: .purchased,
            purchaseTimeMilliseconds: purchased, originalPurchaseTimeMilliseconds: purchased,
            expiresTimeMilliseconds: expires, autoRenew: true, autoRenewProductID: Self.appleProduct,
            acknowledged: true,
            storeTimeMilliseconds: purchased, verifiedTimeMilliseconds: purchased + 800,
            storeAccountRef: appAccountToken, bundleOrPackage: Self.bundle, latestOrderID: orderID)
    }

    func google(
        token: String, accountID: String?, purchased: Int64, expires: Int64, orderID: String, obfuscatedAccount: String
    ) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: token), accountID: accountID,
            productID: Self.googleProduct, basePlanID: "monthly", productKind: .autoRenewable, state: .active,
            ownership: .purchased, purchaseTimeMilliseconds: purchased, originalPurchaseTimeMilliseconds: purchased,
            expiresTimeMilliseconds: expires, autoRenew: true, acknowledged: true, storeTimeMilliseconds: purchased,
            verifiedTimeMilliseconds: purchased + 800, storeAccountRef: obfuscatedAccount,
            bundleOrPackage: Self.bundle, latestOrderID: orderID)
    }

    /// The writes of new purchase `sample` for a fresh account, as the verifier makes them: the
    /// verified state (no account yet), then the link to the account.
    func freshPurchase(sample: Int, runID: String, accountID: String, random: inout FastRandom) -> (
        record: RecordVerifiedStateRequest, link: LinkAccountRequest
    ) {
        let storeID = String(3_000_000_000_000_000 + sample)
        let appAccountToken = random.uuidString()
        let subscription = apple(
            storeID: storeID, accountID: nil, purchased: now, expires: now + 30 * Self.day,
            orderID: storeID, appAccountToken: appAccountToken)
        let event = LifecycleEvent(
            key: subscription.key, kind: .purchased, storeTimeMilliseconds: now, storeType: "SUBSCRIBED",
            notificationID: "\(runID)-notification-\(sample)", state: .active)
        let record = RecordVerifiedStateRequest(
            idempotencyKey: "\(runID)-record-\(sample)", subscription: subscription, events: [event])
        let link = LinkAccountRequest(
            idempotencyKey: "\(runID)-link-\(sample)", key: subscription.key, accountID: accountID,
            storeAccountRef: appAccountToken)
        return (record, link)
    }

    /// A CheckAccess request for `pro` now.
    static func check(_ accountID: String) -> CheckAccessRequest {
        CheckAccessRequest(accountID: accountID, capability: capability)
    }
}
