import Model
import Testing
import Wire

/// One value of every message of `proto/` with every field set (the ledger's from
/// `LedgerFixtures`, the rest here), and every message's default value: the fixed set whose
/// encodings `Golden/wire.txt` keeps.
enum WireGoldenFixtures {
    static let unicode = LedgerFixtures.unicode

    static func period(_ n: Int) -> Period {
        Period(
            periodID: "2000000\(n)", productID: "com.example.pro.\(n)", basePlanID: "monthly-\(n)",
            startMilliseconds: 1_700_000_000_000 + Int64(n), endMilliseconds: Int64.max - Int64(n),
            offerType: n.isMultiple(of: 2) ? .introductory : .winBack, revokedTimeMilliseconds: -7 - Int64(n),
            revocationReason: "refund \(n) \(unicode)", signedTimeMilliseconds: 1_700_000_000_900 + Int64(n),
            productKind: n.isMultiple(of: 2) ? .autoRenewable : .nonRenewing, raw: "eyJ4IjoxfQ.\(n).\(unicode)",
            stoppedTimeMilliseconds: 1_700_000_500_000 + Int64(n))
    }

    /// A subscription with the renewal fields and periods set too.
    static func subscription(_ n: Int) -> Subscription {
        var subscription = LedgerFixtures.subscription(n)
        subscription.periods = [period(n), period(n + 1)]
        subscription.offerType = .freeTrial
        subscription.renewalOfferID = "renewal-offer-\(n)"
        subscription.renewalOfferType = .offerCode
        subscription.expirationReason = .priceIncrease
        subscription.inBillingRetry = true
        subscription.renewalTimeMilliseconds = 1_710_000_000_000 + Int64(n)
        subscription.storefront = "FRA"
        subscription.priceMicros = 4_990_000 + Int64(n)
        subscription.currency = "EUR"
        subscription.renewalOffProducts = ["off.\(n)", "off.\(n + 1)-\(unicode)"]
        subscription.installmentsCommitted = 12
        subscription.installmentsRemaining = Int32(n)
        return subscription
    }

    static func event(_ n: Int) -> LifecycleEvent {
        var event = LedgerFixtures.event(n)
        event.rawTransaction = "eyJ0eCI6MX0.\(n).sig"
        event.rawRenewalInfo = "eyJyaSI6MX0.\(n).sig"
        return event
    }

    static func grant(_ n: Int) -> AccessGrant {
        AccessGrant(
            key: LedgerFixtures.key(n), productID: "product-\(n)-\(unicode)", basePlanID: "plan-\(n)",
            state: .billingRetry, untilMilliseconds: Int64.max - Int64(n),
            renewal: GrantRenewal(
                autoRenew: true, autoRenewProductID: "next-\(n)", expirationReason: .billingError,
                graceExpiresTimeMilliseconds: 1_720_000_000_000 + Int64(n), inBillingRetry: true,
                renewalTimeMilliseconds: -3 - Int64(n), renewalOfferID: "offer-\(n)", renewalOfferType: .promotional,
                offerType: .introductory, storefront: "USA", priceMicros: Int64.min + Int64(n), currency: "USD",
                installmentsCommitted: Int32.max, installmentsRemaining: -Int32(n)))
    }

    static func check(_ n: Int) -> CheckAccessRequest {
        CheckAccessRequest(
            accountID: "account-\(n)-\(unicode)", capability: "pro-\(n)", atMilliseconds: -1 - Int64(n))
    }

    static func checkAnswer(_ n: Int) -> CheckAccessResponse {
        CheckAccessResponse(
            allowed: true, untilMilliseconds: Int64.max - Int64(n), reason: n.isMultiple(of: 2) ? .granted : .revoked,
            grant: grant(n), detail: "detail \(n) \(unicode)")
    }

    /// Every message with every field set, in a fixed order.
    static let fullMessages: [MessageCase] =
        [
            MessageCase(period(1)),
            MessageCase(subscription(1)),
            MessageCase(event(1)),
            MessageCase(HealthRequest()),
            MessageCase(
                HealthResponse(
                    status: .draining, service: "ledger-\(unicode)", version: "1.2.3", uptimeMilliseconds: Int64.max,
                    serverTimeMilliseconds: -1, connections: UInt32.max, callerReadOnly: true)),
            MessageCase(
                RecordVerifiedStateRequest(
                    idempotencyKey: "idem-\(unicode)", subscription: subscription(2), events: [event(2), event(3)],
                    notificationID: "notification-\(unicode)", periods: [period(3), period(4), period(5)],
                    partial: true)),
            MessageCase(
                ListSubscriptionsRequest(
                    store: .google, state: .accountHold, expiresAfterMilliseconds: -10,
                    expiresBeforeMilliseconds: Int64.max, pageSize: 500, pageToken: "page-\(unicode)")),
            MessageCase(
                ListSubscriptionsResponse(subscriptions: [subscription(3), subscription(4)], nextPageToken: "next-✓")),
            MessageCase(GetCursorRequest(name: "reconcile-\(unicode)")),
            MessageCase(AdvanceCursorRequest(name: "cursor-✓", value: Int64.min)),
            MessageCase(Cursor(name: "cursor-\(unicode)", value: Int64.max, updatedTimeMilliseconds: -2)),
            MessageCase(GetFeedPositionRequest()),
            MessageCase(GetFeedPositionResponse(position: .max)),
            MessageCase(SnapshotRequest()),
            MessageCase(
                Change(
                    position: 1 << 40, committedTimeMilliseconds: 1_700_000_000_000, kind: .subscription,
                    subscription: subscription(5), link: LedgerFixtures.link(7), events: [event(4)])),
            MessageCase(check(1)),
            MessageCase(checkAnswer(2)),
            MessageCase(CheckAccessBatchRequest(checks: [check(3), check(4), check(5)])),
            MessageCase(CheckAccessBatchResponse(results: [checkAnswer(6), checkAnswer(7)])),
            MessageCase(ListEntitlementsRequest(accountID: "account-\(unicode)", atMilliseconds: Int64.min)),
            MessageCase(
                ListEntitlementsResponse(entitlements: [
                    EntitlementEntry(capability: "pro", untilMilliseconds: 99, grants: [grant(8), grant(9)]),
                    EntitlementEntry(capability: "ads-free-\(unicode)", untilMilliseconds: -99, grants: [grant(10)]),
                ])),
            MessageCase(ReloadPolicyRequest()),
            MessageCase(ReloadPolicyResponse(version: "sha256-\(unicode)", products: UInt32.max, capabilities: 7)),
            MessageCase(
                VerifyApplePurchaseRequest(
                    accountID: "account-\(unicode)", signedTransaction: "eyJhbGciOiJFUzI1NiJ9.e30.sig",
                    transactionID: "2000000123456789", environment: .sandbox, idempotencyKey: "idem-apple")),
            MessageCase(
                VerifyGooglePurchaseRequest(
                    accountID: "account-👤", packageName: "com.example.app", productID: "pro_monthly",
                    purchaseToken: "token-\(unicode)", idempotencyKey: "idem-google")),
            MessageCase(
                VerifyPurchaseResponse(
                    subscription: subscription(6), newlyLinked: true, previousAccountID: "previous-\(unicode)")),
            MessageCase(
                RestorePurchasesRequest(
                    accountID: "account-\(unicode)", appleSignedTransactions: ["a.b.c", "d.e.f"],
                    appleTransactionIDs: ["1", "22", "333"],
                    googlePurchases: [
                        .init(packageName: "com.example.app", productID: "pro", purchaseToken: "token-1"),
                        .init(packageName: "com.example.app2", productID: "max-\(unicode)", purchaseToken: "token-2"),
                    ], idempotencyKey: "idem-restore")),
            MessageCase(RestorePurchasesResponse(subscriptions: [subscription(7), subscription(8)])),
            MessageCase(RefreshSubscriptionRequest(key: LedgerFixtures.key(9))),
            MessageCase(RefreshSubscriptionResponse(subscription: subscription(9), changed: true)),
        ] + LedgerFixtures.fullMessages

    /// The default value of every message type that has one.
    static let defaultMessages: [MessageCase] =
        [
            MessageCase(HealthRequest()),
            MessageCase(ListSubscriptionsRequest()), MessageCase(ListSubscriptionsResponse()),
            MessageCase(GetCursorRequest()), MessageCase(AdvanceCursorRequest()), MessageCase(Cursor()),
            MessageCase(GetFeedPositionRequest()), MessageCase(GetFeedPositionResponse()),
            MessageCase(CheckAccessRequest()), MessageCase(CheckAccessResponse()),
            MessageCase(CheckAccessBatchRequest()), MessageCase(CheckAccessBatchResponse()),
            MessageCase(ListEntitlementsRequest()), MessageCase(ListEntitlementsResponse()),
            MessageCase(ReloadPolicyRequest()), MessageCase(ReloadPolicyResponse()),
            MessageCase(VerifyApplePurchaseRequest()), MessageCase(VerifyGooglePurchaseRequest()),
            MessageCase(VerifyPurchaseResponse()), MessageCase(RestorePurchasesRequest()),
            MessageCase(RestorePurchasesResponse()), MessageCase(RefreshSubscriptionRequest()),
            MessageCase(RefreshSubscriptionResponse()),
        ] + LedgerFixtures.defaultMessages + [MessageCase(PushAuthentication())]
}
