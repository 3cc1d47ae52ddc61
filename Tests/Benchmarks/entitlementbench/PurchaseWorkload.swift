import Foundation
import Model
import Wire

/// What the benchmark's accounts own: one active subscription each to the `pro` capability,
/// renewed monthly (a year by default), with the fields a verified state carries. Half are
/// bought on the App Store (numeric originalTransactionId keys), each transaction recorded as a
/// period with its raw signed data; half on Google Play (purchase tokens of the length Play
/// issues), each order (`GPA.…`, then `…..0`, `…..1`) recorded as a period with a
/// subscriptionsv2 answer as its raw data. Each state carries its merged access period.
struct PurchaseWorkload {
    /// A seeded subscription and the periods recorded for it, by start.
    struct Seeded {
        var subscription: Subscription
        var periods: [Period]
    }

    static let capability = "pro"
    static let appleProduct = "com.example.pro.monthly"
    static let googleProduct = "pro_subscription"
    static let appleGroup = "21482730"
    static let bundle = "com.example.app"
    /// Transaction ids of one renewal step lie this far apart (more than the most accounts).
    private static let idStride = 10_000_000
    static let checkMethod = EntitlementRPC.checkAccess.name
    static let recordMethod = LedgerRPC.recordVerifiedState.name
    static let linkMethod = LedgerRPC.linkAccount.name

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
    /// Days of the months from January: a seeded year's periods follow the calendar.
    private static let monthDays: [Int64] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

    /// The time everything is relative to (ms since 1970).
    let now: Int64
    /// Signs the seeded App Store transactions' stand-ins.
    let signer: SignedTransactionStandIn
    /// Paid months (transactions or orders) of each seeded subscription, the current one included.
    let months: Int
    /// Whether each paid month is also a `periods` row with its raw signed data (the state's
    /// merged access period is there either way).
    let periodRows: Bool

    init(months: Int = 12, periodRows: Bool = true, now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) {
        self.months = months
        self.periodRows = periodRows
        self.now = now
        var random = FastRandom()
        signer = SignedTransactionStandIn(random: &random)
    }

    /// The subscription of seeded account number `index` (from 0), linked to `accountID`:
    /// bought `months` months ago, renewed monthly since, active, its current month ending 1 to
    /// 29 days from now, each paid month a period (each starts where the previous one ends, so
    /// the state's access periods merge into one). Even indexes are App Store purchases (the
    /// first transaction's id is the originalTransactionId); odd ones Play purchases.
    func seeded(index: Int, accountID: String, random: inout FastRandom) -> Seeded {
        // The current month started 1 day or more ago and ends 1 day or more from now.
        var month = Int(random.next() % 12)
        let expires = now + Self.day + Int64(random.next() % UInt64((Self.monthDays[month] - 2) * Self.day))
        var starts: [Int64] = []
        var start = expires
        for _ in 0..<months {
            start -= Self.monthDays[month] * Self.day
            starts.append(start)
            month = (month + 11) % 12
        }
        starts.reverse()
        if index % 2 == 0 {
            // Apple's transaction ids: 16-digit numbers, the first the originalTransactionId.
            let ids = (0..<months).map { String(2_000_000_000_000_000 + $0 * Self.idStride + index) }
            let appAccountToken = random.uuidString()
            var periods: [Period] = []
            periods.reserveCapacity(months)
            for (renewal, periodStart) in starts.enumerated() {
                let periodEnd = renewal + 1 < starts.count ? starts[renewal + 1] : expires
                // A renewal is charged and signed up to a day before its period starts.
                let signed =
                    renewal == 0 ? periodStart + 900 : periodStart - Int64(random.next() % UInt64(Self.day))
                let transaction = AppleTransactionJSON(
                    transactionID: ids[renewal], originalTransactionID: ids[0],
                    webOrderLineItemID: String(1_000_000_000_000_000 + renewal * Self.idStride + index),
                    purchase: periodStart, originalPurchase: starts[0], expires: periodEnd, signed: signed,
                    appAccountToken: appAccountToken, renewal: renewal > 0,
                    appTransactionID: String(704_000_000_000_000_000 + index))
                periods.append(
                    Period(
                        periodID: ids[renewal], productID: Self.appleProduct, basePlanID: Self.appleGroup,
                        startMilliseconds: periodStart, endMilliseconds: periodEnd, signedTimeMilliseconds: signed,
                        productKind: .autoRenewable,
                        raw: periodRows ? signer.signed(transaction.text, random: &random) : nil))
            }
            let latest = periods[periods.count - 1]
            var subscription = apple(
                storeID: ids[0], accountID: accountID, purchased: latest.startMilliseconds, expires: expires,
                orderID: latest.periodID, appAccountToken: appAccountToken, originalPurchased: starts[0],
                signed: latest.signedTimeMilliseconds)
            subscription.periods = Period.accessPeriods(periods, clipsAtNextStart: true)
            return Seeded(subscription: subscription, periods: periods)
        }
        let token = Self.purchaseToken(&random)
        let firstOrder = "GPA.\(3300 + index % 100)-\(1000 + index % 9000)-\(index % 10000)-\(10000 + index % 90000)"
        let obfuscatedAccount = random.text(count: 32, from: Self.base64URL)
        var periods: [Period] = []
        periods.reserveCapacity(months)
        for (renewal, periodStart) in starts.enumerated() {
            let periodEnd = renewal + 1 < starts.count ? starts[renewal + 1] : expires
            let order = renewal == 0 ? firstOrder : "\(firstOrder)..\(renewal - 1)"
            periods.append(
                Period(
                    periodID: Period.googlePeriodID(orderID: order, productID: Self.googleProduct),
                    productID: Self.googleProduct, basePlanID: "monthly", startMilliseconds: periodStart,
                    endMilliseconds: periodEnd, signedTimeMilliseconds: periodStart + 900, productKind: .autoRenewable,
                    raw: periodRows
                        ? Self.subscriptionsV2(
                            order: order, start: starts[0], expiry: periodEnd, obfuscatedAccount: obfuscatedAccount)
                        : nil))
        }
        var subscription = google(
            token: token, accountID: accountID, purchased: starts[starts.count - 1], expires: expires,
            orderID: months > 1 ? "\(firstOrder)..\(months - 2)" : firstOrder, obfuscatedAccount: obfuscatedAccount,
            originalPurchased: starts[0])
        subscription.periods = Period.googleAccessPeriods(periods)
        return Seeded(subscription: subscription, periods: periods)
    }

    /// A subscriptionsv2 answer for one order of a seeded Play purchase (the fields and size of
    /// a real one), kept as its period's raw data.
    static func subscriptionsV2(order: String, start: Int64, expiry: Int64, obfuscatedAccount: String) -> String {
        let startTime = Self.rfc3339(start)
        let expiryTime = Self.rfc3339(expiry)
        return """
            {"kind":"androidpublisher#subscriptionPurchaseV2","startTime":"\(startTime)","regionCode":"US",\
            "subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","latestOrderId":"\(order)",\
            "acknowledgementState":"ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",\
            "externalAccountIdentifiers":{"obfuscatedExternalAccountId":"\(obfuscatedAccount)"},\
            "lineItems":[{"productId":"\(googleProduct)","expiryTime":"\(expiryTime)",\
            "autoRenewingPlan":{"autoRenewEnabled":true,"recurringPrice":{"currencyCode":"USD","units":"4",\
            "nanos":990000000}},"offerDetails":{"basePlanId":"monthly","offerTags":["standard"]},\
            "latestSuccessfulOrderId":"\(order)"}]}
            """
    }

    /// `milliseconds` since 1970 as RFC 3339 UTC with milliseconds, as Play writes times.
    static func rfc3339(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = milliseconds % 1000
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }

    /// A Play purchase token: 24 lowercase letters, a dot, then 125 URL-safe base64 characters
    /// starting "AO-J1O" (150 in all, the length tokens have).
    static func purchaseToken(_ random: inout FastRandom) -> String {
        random.text(count: 24, from: lowercase) + ".AO-J1O" + random.text(count: 119, from: base64URL)
    }

    /// An App Store state: the latest transaction `purchased` (its `signed` time the store
    /// time, `purchased` when nil), the first one `originalPurchased` (`purchased` when nil).
    func apple(
        storeID: String, accountID: String?, purchased: Int64, expires: Int64, orderID: String,
        appAccountToken: String, originalPurchased: Int64? = nil, signed: Int64? = nil
    ) -> Subscription {
        let storeTime = signed ?? purchased
        return Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: storeID), accountID: accountID,
            productID: Self.appleProduct, basePlanID: Self.appleGroup, productKind: .autoRenewable, state: .active,
            ownership: .purchased, purchaseTimeMilliseconds: purchased,
            originalPurchaseTimeMilliseconds: originalPurchased ?? purchased, expiresTimeMilliseconds: expires,
            autoRenew: true, autoRenewProductID: Self.appleProduct, acknowledged: true,
            storeTimeMilliseconds: storeTime, verifiedTimeMilliseconds: storeTime + 800,
            storeAccountRef: appAccountToken, bundleOrPackage: Self.bundle, latestOrderID: orderID)
    }

    /// A Play state: the current period `purchased`, the first `originalPurchased` (`purchased`
    /// when nil).
    func google(
        token: String, accountID: String?, purchased: Int64, expires: Int64, orderID: String, obfuscatedAccount: String,
        originalPurchased: Int64? = nil
    ) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: token), accountID: accountID,
            productID: Self.googleProduct, basePlanID: "monthly", productKind: .autoRenewable, state: .active,
            ownership: .purchased, purchaseTimeMilliseconds: purchased,
            originalPurchaseTimeMilliseconds: originalPurchased ?? purchased, expiresTimeMilliseconds: expires,
            autoRenew: true, acknowledged: true, storeTimeMilliseconds: purchased,
            verifiedTimeMilliseconds: purchased + 800, storeAccountRef: obfuscatedAccount,
            bundleOrPackage: Self.bundle, latestOrderID: orderID)
    }

    /// The writes of new purchase `sample` for a fresh account, as the verifier makes them: the
    /// verified state (no account yet), then the link to the account. Its transaction id is
    /// `firstID + sample`: a run's own, so that a database kept from an earlier run (whose
    /// purchases are linked to other accounts) is never asked to link one again.
    func freshPurchase(
        sample: Int, firstID: UInt64, runID: String, accountID: String, random: inout FastRandom
    ) -> (record: RecordVerifiedStateRequest, link: LinkAccountRequest) {
        let storeID = String(firstID + UInt64(sample))
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
