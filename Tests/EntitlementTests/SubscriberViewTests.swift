import Foundation
import Model
import Testing
import Wire

@testable import EntitlementService

/// GetActiveSubscriptions and HasActiveSubscriptions from the view, promotional grants in checks
/// and listings, and an account the view lets go of.
@Suite("Subscriber view, grants and forgotten accounts")
struct SubscriberViewTests {
    static let policy = try! ProductPolicy(
        parsing: """
            capability pro
              apple com.example.pro.monthly
              apple com.example.premium.monthly
              google pro_sub
            capability support
              apple com.example.pro.monthly
            """)
    static let now = EntitlementViewTests.now
    static let day = EntitlementViewTests.day
    static let account = "user-1"

    static func subscription(
        _ store: Store, _ id: String, product: String, state: SubscriptionState, expires: Int64,
        grace: Int64? = nil, ownership: Ownership = .purchased, kind: ProductKind = .autoRenewable,
        renewal: (inout Subscription) -> Void = { _ in }
    ) -> Subscription {
        var subscription = Subscription(
            key: SubscriptionKey(store: store, environment: .production, storeID: id), accountID: account,
            productID: product, basePlanID: store == .google ? "monthly" : nil, productKind: kind, state: state,
            ownership: ownership, purchaseTimeMilliseconds: now - 20 * day, expiresTimeMilliseconds: expires,
            graceExpiresTimeMilliseconds: grace, autoRenew: state == .active, storeTimeMilliseconds: now,
            bundleOrPackage: store == .google ? "com.example.app" : "com.example.ios")
        renewal(&subscription)
        return subscription
    }

    static func active(_ view: EntitlementView, products: [String] = [], at: Int64 = now) throws
        -> [ActiveSubscription]
    {
        try EntitlementMethods.activeSubscriptions(
            GetActiveSubscriptionsRequest(accountID: account, productIDs: products, atMilliseconds: at), view: view,
            policy: policy, now: now)
    }

    /// Each store's states: what is listed, and whether it gives access.
    @Test("each store's states: active, cancelled, grace, retry, hold, paused, family shared, a pending change")
    func states() throws {
        let view = EntitlementView()
        let end = Self.now + 10 * Self.day
        let subscriptions = [
            Self.subscription(.apple, "1001", product: "com.example.pro.monthly", state: .active, expires: end) {
                // A downgrade waits for the renewal.
                $0.autoRenewProductID = "com.example.basic.monthly"
                $0.renewalTimeMilliseconds = end
                $0.priceMicros = 4_990_000
                $0.currency = "USD"
            },
            Self.subscription(.apple, "1002", product: "com.example.pro.monthly", state: .cancelled, expires: end) {
                $0.expirationReason = .cancelled
            },
            Self.subscription(
                .google, "token-grace", product: "pro_sub", state: .gracePeriod, expires: Self.now + 2 * Self.day),
            Self.subscription(
                .apple, "1003", product: "com.example.premium.monthly", state: .billingRetry,
                expires: Self.now - Self.day
            ) { $0.inBillingRetry = true },
            Self.subscription(
                .google, "token-hold", product: "pro_sub", state: .accountHold, expires: Self.now - 1),
            Self.subscription(.google, "token-paused", product: "pro_sub", state: .paused, expires: Self.now - 1),
            Self.subscription(
                .apple, "1004", product: "com.example.pro.monthly", state: .active, expires: end,
                ownership: .familyShared),
            Self.subscription(
                .apple, "1005", product: "com.example.pro.monthly", state: .expired, expires: Self.now - 1),
            Self.subscription(.apple, "1006", product: "com.example.pro.monthly", state: .revoked, expires: end) {
                $0.revokedTimeMilliseconds = Self.now - Self.day
            },
        ]
        view.load(subscriptions, position: 1)
        let listed = try Self.active(view)
        // By key (store, then id): the same whatever order the view learned of them in.
        #expect(
            listed.map(\.key?.storeID) == [
                "1001", "1002", "1003", "1004", "token-grace", "token-hold", "token-paused",
            ])
        let reversed = EntitlementView()
        reversed.load(subscriptions.reversed(), position: 1)
        #expect(try Self.active(reversed) == listed)
        #expect(listed.map(\.isActive) == [true, true, false, true, true, false, false])
        #expect(
            listed.map(\.state) == [.active, .cancelled, .billingRetry, .active, .gracePeriod, .accountHold, .paused])
        let first = listed[0]
        #expect(first.productID == "com.example.pro.monthly" && first.productKind == .autoRenewable)
        #expect(first.accessUntilMilliseconds == end && first.expirationMilliseconds == end)
        #expect(first.renewal?.autoRenew == true && first.renewal?.autoRenewProductID == "com.example.basic.monthly")
        #expect(first.renewal?.renewalTimeMilliseconds == end && first.renewal?.priceMicros == 4_990_000)
        #expect(first.managementURL == "https://apps.apple.com/account/subscriptions")
        #expect(first.ownership == .purchased && listed[3].ownership == .familyShared)
        #expect(listed[1].renewal?.autoRenew == false && listed[1].renewal?.expirationReason == .cancelled)
        #expect(listed[2].renewal?.inBillingRetry == true && listed[2].accessUntilMilliseconds == nil)
        let grace = listed[4]
        #expect(grace.basePlanID == "monthly" && grace.key?.store == .google)
        #expect(
            grace.managementURL
                == "https://play.google.com/store/account/subscriptions?sku=pro_sub&package=com.example.app")
        // Only the products asked for.
        #expect(
            try Self.active(view, products: ["pro_sub"]).map(\.key?.storeID) == [
                "token-grace", "token-hold", "token-paused",
            ])
        #expect(try Self.active(view, products: ["com.example.other"]).isEmpty)
        // Later, the grace has run out and the Apple periods have ended.
        let later = try Self.active(view, at: end + 1)
        #expect(later.map(\.key?.storeID) == ["1003", "token-hold", "token-paused"])
        #expect(later.allSatisfy { !$0.isActive })
        // An account the view does not know holds nothing.
        #expect(
            try EntitlementMethods.activeSubscriptions(
                GetActiveSubscriptionsRequest(accountID: "nobody"), view: view, policy: Self.policy, now: Self.now
            ).isEmpty)
    }

    @Test("the subscriber view's requests are checked: the account id, at most 100 product ids of 1 to 256 bytes")
    func requestChecks() throws {
        let view = EntitlementView()
        view.load([], position: 1)
        func refused(_ request: GetActiveSubscriptionsRequest) -> RPCError? {
            do {
                _ = try EntitlementMethods.activeSubscriptions(request, view: view, policy: Self.policy, now: Self.now)
                return nil
            } catch { return error.rpcError }
        }
        #expect(
            refused(GetActiveSubscriptionsRequest(accountID: ""))
                == RPCError(.invalidArgument, "account_id must be 1 to 256 bytes"))
        #expect(
            refused(GetActiveSubscriptionsRequest(accountID: "a", productIDs: Array(repeating: "p", count: 101)))
                == RPCError(.invalidArgument, "at most 100 product_ids, got 101"))
        #expect(
            refused(GetActiveSubscriptionsRequest(accountID: "a", productIDs: ["p", ""]))
                == RPCError(.invalidArgument, "product_ids[1] must be 1 to 256 bytes"))
    }

    @Test("the Play link percent-encodes its product and package; one-time purchases and grants have none")
    func managementLinks() {
        #expect(
            EntitlementMethods.managementURL(
                store: .google, kind: .autoRenewable, productID: "pro+plus sub", package: "com.example.app")
                == "https://play.google.com/store/account/subscriptions?sku=pro%2Bplus%20sub&package=com.example.app")
        #expect(
            EntitlementMethods.managementURL(store: .google, kind: .autoRenewable, productID: "pro", package: nil)
                == "https://play.google.com/store/account/subscriptions")
        #expect(
            EntitlementMethods.managementURL(store: .apple, kind: .nonConsumable, productID: "x", package: nil) == "")
        #expect(
            EntitlementMethods.managementURL(store: .promotional, kind: .nonConsumable, productID: "pro", package: nil)
                == "")
    }

    /// A grant as the ledger records it.
    static func grant(_ id: String, capability: String, until: Int64?, revoked: Int64? = nil) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: .promotional, environment: .production, storeID: id), accountID: account,
            productID: capability, productKind: until == nil ? .nonConsumable : .nonRenewing,
            state: revoked == nil ? .active : .revoked, ownership: .purchased,
            purchaseTimeMilliseconds: now - day, expiresTimeMilliseconds: until, revokedTimeMilliseconds: revoked,
            storeTimeMilliseconds: now)
    }

    @Test("grants count in CheckAccess and ListEntitlements beside store purchases; an ended or revoked one does not")
    func grants() throws {
        let view = EntitlementView()
        view.load(
            [
                Self.subscription(
                    .apple, "1001", product: "com.example.pro.monthly", state: .active, expires: Self.now + Self.day),
                Self.grant("grant_a", capability: "pro", until: Self.now + 30 * Self.day),
                Self.grant("grant_b", capability: "support", until: nil),
            ], position: 1)
        func check(_ capability: String, at: Int64 = Self.now) throws -> CheckAccessResponse {
            try EntitlementMethods.check(
                CheckAccessRequest(accountID: Self.account, capability: capability, atMilliseconds: at), view: view,
                policy: Self.policy, now: Self.now)
        }
        // The grant outlasts the purchase.
        let pro = try check("pro")
        #expect(pro.allowed && pro.untilMilliseconds == Self.now + 30 * Self.day)
        #expect(pro.grant?.key?.store == .promotional && pro.grant?.productID == "pro")
        let support = try check("support")
        #expect(support.allowed && support.untilMilliseconds == nil && support.grant?.key?.storeID == "grant_b")
        let listed = try EntitlementMethods.list(
            ListEntitlementsRequest(accountID: Self.account), view: view, policy: Self.policy, now: Self.now)
        #expect(listed.entitlements.map(\.capability) == ["pro", "support"])
        #expect(listed.entitlements[0].grants.map(\.key?.storeID) == ["1001", "grant_a"])
        #expect(listed.entitlements[1].grants.map(\.key?.storeID) == ["1001", "grant_b"])
        // After its end the purchase is gone and the grant ends.
        let after = try check("pro", at: Self.now + 30 * Self.day)
        #expect(!after.allowed && after.reason == .expired)
        // A revocation ends it from its time.
        view.apply(
            position: 2, subscription: Self.grant("grant_b", capability: "support", until: nil, revoked: Self.now))
        let revoked = try check("support", at: Self.now + 1)
        #expect(revoked.allowed)  // the purchase still grants it
        #expect(revoked.grant?.key?.storeID == "1001")
        let supportLater = try check("support", at: Self.now + 2 * Self.day)
        #expect(
            !supportLater.allowed && supportLater.reason == .revoked && supportLater.grant?.key?.storeID == "grant_b")
        // In the subscriber view, without a management link.
        let subscriptions = try Self.active(view)
        #expect(subscriptions.map(\.key?.storeID) == ["1001", "grant_a"])
        #expect(subscriptions[1].managementURL == "" && subscriptions[1].productKind == .nonRenewing)
        // A grant of a capability the policy does not have grants nothing.
        view.apply(position: 3, subscription: Self.grant("grant_c", capability: "missing", until: nil))
        #expect(try check("missing").reason == .unknownCapability)
    }

    @Test("an account whose last subscription goes is forgotten: not found, its id erased; linked again, it is found")
    func forgetting() throws {
        let view = EntitlementView()
        let apple = Self.subscription(
            .apple, "1001", product: "com.example.pro.monthly", state: .active, expires: Self.now + Self.day)
        var uuidOwned = apple
        uuidOwned.key.storeID = "1002"
        uuidOwned.accountID = EntitlementViewTests.alice
        view.load([apple, uuidOwned], position: 1)
        #expect(view.counts == (2, 2))
        var unlinked = apple
        unlinked.accountID = nil
        view.apply(position: 2, subscription: unlinked)
        var unlinkedUUID = uuidOwned
        unlinkedUUID.accountID = nil
        view.apply(position: 3, subscription: unlinkedUUID)
        #expect(view.counts == (0, 0))
        #expect(view.subscriptions(of: Self.account).isEmpty)
        let records = view.withAccount("x", policy: Self.policy) { tables, _ in
            (0..<2).map { tables.accounts[$0] }
        }
        #expect(records.allSatisfy { $0.isForgotten })
        // The text id's bytes are zeros now; the UUID's halves too.
        let text = view.withAccount("x", policy: Self.policy) { tables, _ in tables.texts.string(records[0].high) }
        #expect(text == String(repeating: "\u{0}", count: Self.account.utf8.count))
        #expect(records[1].high == 0 && records[1].low == 0)
        #expect(try !EntitlementViewTests.check(view, Self.account).allowed)
        // Linked again: a new record, found.
        view.apply(position: 4, subscription: apple)
        #expect(view.subscriptions(of: Self.account).map(\.key.storeID) == ["1001"])
        #expect(
            try EntitlementMethods.check(
                CheckAccessRequest(accountID: Self.account, capability: "pro", atMilliseconds: Self.now), view: view,
                policy: Self.policy, now: Self.now
            ).allowed)
    }
}
