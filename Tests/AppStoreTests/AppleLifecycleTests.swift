import AppStore
import Crypto
import Foundation
import Model
import Testing

@Suite("Apple lifecycle in the shared model")
struct AppleLifecycleTests {
    static let eventKinds: [(String, String?, EventKind)] = [
        ("SUBSCRIBED", "INITIAL_BUY", .purchased), ("SUBSCRIBED", "RESUBSCRIBE", .purchased),
        ("DID_CHANGE_RENEWAL_PREF", "UPGRADE", .productChanged),
        ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", .productChangeScheduled),
        ("DID_CHANGE_RENEWAL_PREF", nil, .productChangeScheduled),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", .renewalEnabled),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", .renewalDisabled),
        ("OFFER_REDEEMED", "INITIAL_BUY", .purchased), ("OFFER_REDEEMED", "RESUBSCRIBE", .purchased),
        ("OFFER_REDEEMED", "UPGRADE", .productChanged), ("OFFER_REDEEMED", "DOWNGRADE", .productChangeScheduled),
        ("OFFER_REDEEMED", nil, .renewed), ("DID_RENEW", nil, .renewed),
        ("DID_RENEW", "BILLING_RECOVERY", .billingRecovered),
        ("EXPIRED", "VOLUNTARY", .expired), ("EXPIRED", "BILLING_RETRY", .expired),
        ("EXPIRED", "PRICE_INCREASE", .expired),
        ("EXPIRED", "PRODUCT_NOT_FOR_SALE", .expired), ("DID_FAIL_TO_RENEW", nil, .billingFailed),
        ("DID_FAIL_TO_RENEW", "GRACE_PERIOD", .gracePeriodStarted), ("GRACE_PERIOD_EXPIRED", nil, .billingFailed),
        ("PRICE_INCREASE", "PENDING", .priceChange), ("PRICE_INCREASE", "ACCEPTED", .priceChange),
        ("REFUND", nil, .refunded), ("REFUND_DECLINED", nil, .refundDeclined),
        ("REFUND_REVERSED", nil, .refundReversed),
        ("CONSUMPTION_REQUEST", nil, .consumptionRequest), ("RENEWAL_EXTENDED", nil, .renewalExtended),
        ("RENEWAL_EXTENSION", "SUMMARY", .renewalExtended), ("RENEWAL_EXTENSION", "FAILURE", .renewalExtended),
        ("REVOKE", nil, .revoked), ("TEST", nil, .test), ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", .other),
        ("ONE_TIME_CHARGE", nil, .purchased), ("RESCIND_CONSENT", nil, .other), ("METADATA_UPDATE", nil, .other),
        ("MIGRATION", nil, .other), ("PRICE_CHANGE", nil, .priceChange), ("A_TYPE_FROM_NEXT_YEAR", "NEW", .other),
    ]

    @Test("every documented type and subtype maps to its event; a new one maps to other")
    func eventKinds() {
        for (type, subtype, expected) in Self.eventKinds {
            let kind = AppleLifecycle.eventKind(
                type: AppleNotificationType(rawValue: type),
                subtype: subtype.map(AppleNotificationSubtype.init(rawValue:)))
            #expect(kind == expected, "\(type) \(subtype ?? "-")")
        }
        let types = Set(Self.eventKinds.map(\.0)).filter { AppleNotificationType(rawValue: $0).isKnown }
        #expect(types.count == 23 && AppleNotificationType.known.count == 23)
        let subtypes = Set(Self.eventKinds.compactMap(\.1)).filter { AppleNotificationSubtype(rawValue: $0).isKnown }
        #expect(subtypes.count == 17 && AppleNotificationSubtype.known.count == 17)
    }

    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let nowMS: Int64 = 1_790_000_000_000
    static let day: Int64 = 86_400_000

    static func transaction(
        expires: Int64 = nowMS + 10 * day, ownership: String = "PURCHASED", type: String = "Auto-Renewable Subscription"
    ) -> AppleTransaction {
        var transaction = AppleTransaction()
        transaction.transactionId = "2000000002"
        transaction.originalTransactionId = "2000000001"
        transaction.bundleId = "com.example.app"
        transaction.productId = "com.example.monthly"
        transaction.subscriptionGroupIdentifier = "21000001"
        transaction.purchaseDate = nowMS - 20 * day
        transaction.originalPurchaseDate = nowMS - 50 * day
        transaction.expiresDate = expires
        transaction.type = type
        transaction.inAppOwnershipType = ownership
        transaction.environment = "Production"
        transaction.signedDate = nowMS - 1000
        transaction.appAccountToken = "7a1c2f0e-3b7d-4d7c-9a57-1b2c3d4e5f60"
        return transaction
    }

    static func renewal(autoRenew: Int = 1, next: String? = nil, retry: Bool? = nil, grace: Int64? = nil)
        -> AppleRenewalInfo
    {
        var info = AppleRenewalInfo()
        info.originalTransactionId = "2000000001"
        info.productId = "com.example.monthly"
        info.autoRenewProductId = next ?? "com.example.monthly"
        info.autoRenewStatus = autoRenew
        info.isInBillingRetryPeriod = retry
        info.gracePeriodExpiresDate = grace
        info.signedDate = nowMS - 500
        info.environment = "Production"
        return info
    }

    @Test("status and renewal info give the table's state; ids, times and references carry over")
    func statusTable() throws {
        func state(
            _ status: Int?, _ transaction: AppleTransaction = Self.transaction(),
            _ renewal: AppleRenewalInfo? = Self.renewal()
        )
            throws -> Subscription
        {
            try AppleLifecycle.subscription(
                transaction: transaction, renewalInfo: renewal, status: status, now: Self.now)
        }
        let active = try state(1)
        #expect(active.state == .active && active.autoRenew)
        #expect(active.key == SubscriptionKey(store: .apple, environment: .production, storeID: "2000000001"))
        #expect(active.latestOrderID == "2000000002" && active.basePlanID == "21000001")
        #expect(active.expiresTimeMilliseconds == Self.nowMS + 10 * Self.day)
        #expect(active.storeTimeMilliseconds == Self.nowMS - 500)
        #expect(active.storeAccountRef == "7a1c2f0e-3b7d-4d7c-9a57-1b2c3d4e5f60")
        #expect(active.productKind == .autoRenewable && active.ownership == .purchased && active.acknowledged)
        #expect(try state(1, Self.transaction(), Self.renewal(autoRenew: 0)).state == .cancelled)
        #expect(try state(2).state == .expired)
        #expect(try state(3).state == .billingRetry)
        let grace = try state(4, Self.transaction(), Self.renewal(retry: true, grace: Self.nowMS + 3 * Self.day))
        #expect(grace.state == .gracePeriod && grace.graceExpiresTimeMilliseconds == Self.nowMS + 3 * Self.day)
        #expect(try state(5).state == .revoked)
        var refunded = Self.transaction()
        refunded.revocationDate = Self.nowMS - 2 * Self.day
        refunded.revocationReason = 1
        let revoked = try state(1, refunded)
        #expect(revoked.state == .revoked && revoked.revokedTimeMilliseconds == Self.nowMS - 2 * Self.day)
        #expect(revoked.revocationReason == "1")
        let shared = try state(1, Self.transaction(ownership: "FAMILY_SHARED"))
        #expect(shared.ownership == .familyShared && shared.state == .active)
        let downgrade = try state(1, Self.transaction(), Self.renewal(next: "com.example.basic"))
        #expect(downgrade.productID == "com.example.monthly" && downgrade.autoRenewProductID == "com.example.basic")
        #expect(downgrade.state == .active)
        var upgraded = Self.transaction()
        upgraded.isUpgraded = true
        #expect(try state(1, upgraded).state == .expired)
    }

    @Test("without a status the dates decide, at the injected time")
    func derivedStates() throws {
        func state(_ transaction: AppleTransaction, _ renewal: AppleRenewalInfo?) throws -> SubscriptionState? {
            try AppleLifecycle.subscription(transaction: transaction, renewalInfo: renewal, status: nil, now: Self.now)
                .state
        }
        #expect(try state(Self.transaction(), Self.renewal()) == .active)
        #expect(try state(Self.transaction(), Self.renewal(autoRenew: 0)) == .cancelled)
        #expect(try state(Self.transaction(expires: Self.nowMS - 1), Self.renewal()) == .expired)
        #expect(try state(Self.transaction(expires: Self.nowMS - 1), Self.renewal(retry: true)) == .billingRetry)
        #expect(
            try state(Self.transaction(expires: Self.nowMS - 1), Self.renewal(retry: true, grace: Self.nowMS + 1))
                == .gracePeriod)
        #expect(try state(Self.transaction(type: "Non-Consumable"), nil) == .active)
        #expect(
            try state(Self.transaction(expires: Self.nowMS - 1, type: "Non-Renewing Subscription"), nil) == .expired)
        var incomplete = Self.transaction()
        incomplete.productId = nil
        #expect(throws: AppleLifecycle.Incomplete.self) { _ = try state(incomplete, nil) }
    }

    @Test(
        "the real sandbox notifications normalize to the state their type implies",
        .enabled(if: AppleFixtures.available, Comment(rawValue: AppleFixtures.skipMessage)))
    func realNotifications() throws {
        let verifier = try AppleFixtureTests.verifier()
        var seen: [String: SubscriptionState] = [:]
        for line in AppleFixtures.lines() where line.kind == .notification {
            let notification = try verifier.verifyNotification(line.jws)
            let data = try #require(notification.data)
            let transaction = try verifier.verifyTransaction(try #require(data.signedTransactionInfo))
            let renewal = try data.signedRenewalInfo.map { try verifier.verifyRenewalInfo($0) }
            let subscription = try AppleLifecycle.subscription(
                transaction: transaction, renewalInfo: renewal, status: data.status,
                now: Date(timeIntervalSince1970: Double(notification.signedDate ?? 0) / 1000),
                notificationSignedDate: notification.signedDate)
            #expect(subscription.key.environment == .sandbox)
            #expect(subscription.storeTimeMilliseconds == notification.signedDate)
            let name = notification.notificationType.rawValue + (notification.subtype.map { "_" + $0.rawValue } ?? "")
            seen[name] = subscription.state
            if notification.notificationType == .refund {
                #expect(subscription.revokedTimeMilliseconds == transaction.revocationDate)
            }
        }
        #expect(seen["REFUND"] == .revoked)
        #expect(seen["EXPIRED_VOLUNTARY"] == .expired)
        #expect(seen["DID_RENEW"] == .active)
        #expect(seen["SUBSCRIBED_RESUBSCRIBE"] != nil)
    }
}
