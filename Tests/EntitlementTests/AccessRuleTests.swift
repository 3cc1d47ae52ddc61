import EntitlementService
import Model
import Testing

@Suite("Access rule")
struct AccessRuleTests {
    static let purchase: Int64 = 1_000_000
    static let expiry: Int64 = 2_000_000
    let rules = AccessRules.default

    func purchase(
        _ kind: ProductKind?, state: SubscriptionState?, product: String = "com.example.pro.monthly",
        expires: Int64? = expiry, grace: Int64? = nil, revoked: Int64? = nil, store: Store = .apple,
        id: String = "2000000000000001"
    ) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: store, environment: .production, storeID: id), productID: product,
            productKind: kind, state: state, ownership: .purchased, purchaseTimeMilliseconds: Self.purchase,
            expiresTimeMilliseconds: expires, graceExpiresTimeMilliseconds: grace, revokedTimeMilliseconds: revoked)
    }

    @Test("the period includes its start and excludes its end")
    func boundaries() {
        let active = purchase(.autoRenewable, state: .active)
        #expect(rules.decision(for: active, at: Self.purchase) == .allowed(untilMilliseconds: Self.expiry))
        #expect(rules.decision(for: active, at: Self.expiry - 1) == .allowed(untilMilliseconds: Self.expiry))
        #expect(rules.decision(for: active, at: Self.expiry) == .denied(.expired))
        let revoked = purchase(.autoRenewable, state: .revoked, revoked: 1_500_000)
        #expect(rules.decision(for: revoked, at: 1_499_999) == .allowed(untilMilliseconds: 1_500_000))
        #expect(rules.decision(for: revoked, at: 1_500_000) == .denied(.revoked))
    }

    @Test("a revocation after the end of the period does not extend it")
    func revocationAfterExpiry() {
        let revoked = purchase(.autoRenewable, state: .revoked, revoked: 2_300_000)
        #expect(rules.decision(for: revoked, at: 1_500_000) == .allowed(untilMilliseconds: Self.expiry))
        #expect(rules.decision(for: revoked, at: 2_100_000) == .denied(.expired))
        #expect(rules.decision(for: revoked, at: 2_300_000) == .denied(.revoked))
    }

    @Test("grace without a grace end lasts until the expiry")
    func graceWithoutEnd() {
        let grace = purchase(.autoRenewable, state: .gracePeriod, grace: nil)
        #expect(rules.decision(for: grace, at: 1_500_000) == .allowed(untilMilliseconds: Self.expiry))
        #expect(rules.decision(for: grace, at: Self.expiry) == .denied(.expired))
    }

    @Test("a lifetime purchase grants with no end until it is revoked, also retroactively")
    func lifetime() {
        let lifetime = purchase(.nonConsumable, state: .active, product: "com.example.lifetime", expires: nil)
        #expect(rules.decision(for: lifetime, at: Self.purchase - 1) == .denied(.noGrant))
        #expect(rules.decision(for: lifetime, at: Self.purchase) == .allowed(untilMilliseconds: nil))
        #expect(rules.decision(for: lifetime, at: 9_000_000_000_000) == .allowed(untilMilliseconds: nil))
        let refunded = purchase(
            .nonConsumable, state: .revoked, product: "com.example.lifetime", expires: nil, revoked: 5_000_000)
        #expect(rules.decision(for: refunded, at: 4_000_000) == .allowed(untilMilliseconds: 5_000_000))
        #expect(rules.decision(for: refunded, at: 5_000_000) == .denied(.revoked))
        #expect(rules.decision(for: refunded, at: 6_000_000) == .denied(.revoked))
        let revokedNoTime = purchase(.nonConsumable, state: .revoked, product: "com.example.lifetime", expires: nil)
        #expect(rules.decision(for: revokedNoTime, at: 4_000_000) == .denied(.revoked))
        let pending = purchase(.nonConsumable, state: .pending, product: "com.example.lifetime", expires: nil)
        #expect(rules.decision(for: pending, at: 4_000_000) == .denied(.stateDenies))
    }

    @Test("a consumable grants no lasting capability", arguments: SubscriptionState.allCases)
    func consumable(state: SubscriptionState) {
        let coins = purchase(.consumable, state: state, product: "com.example.coins", expires: nil)
        #expect(rules.decision(for: coins, at: Self.purchase) == .denied(.noGrant))
        #expect(rules.decision(for: coins, at: 1_500_000) == .denied(.noGrant))
    }

    @Test("a non-renewing subscription ends at its expiry; one without an expiry has no end")
    func nonRenewing() {
        let season = purchase(.nonRenewing, state: .active)
        #expect(rules.decision(for: season, at: 1_500_000) == .allowed(untilMilliseconds: Self.expiry))
        #expect(rules.decision(for: season, at: Self.expiry) == .denied(.expired))
        let open = purchase(.nonRenewing, state: .active, expires: nil)
        #expect(rules.decision(for: open, at: 1_500_000) == .allowed(untilMilliseconds: nil))
        let openRevoked = purchase(.nonRenewing, state: .revoked, expires: nil, revoked: 1_700_000)
        #expect(rules.decision(for: openRevoked, at: 1_500_000) == .allowed(untilMilliseconds: 1_700_000))
    }

    @Test("a subscription without a state, or without a purchase time, is judged by what it has")
    func missingFacts() {
        #expect(rules.decision(for: purchase(.autoRenewable, state: nil), at: 1_500_000) == .denied(.stateDenies))
        var noStart = purchase(.autoRenewable, state: .active)
        noStart.purchaseTimeMilliseconds = nil
        #expect(rules.decision(for: noStart, at: 0) == .allowed(untilMilliseconds: Self.expiry))
        var unknownKind = purchase(nil, state: .active)
        #expect(rules.decision(for: unknownKind, at: 1_500_000) == .allowed(untilMilliseconds: Self.expiry))
        unknownKind.productKind = .unknown(9)
        #expect(rules.decision(for: unknownKind, at: 1_500_000) == .allowed(untilMilliseconds: Self.expiry))
    }

    @Test("a pending downgrade does not change today's access")
    func pendingDowngrade() throws {
        let policy = try ProductPolicy(
            parsing: """
                capability pro
                  apple com.example.pro.monthly
                capability basic
                  apple com.example.basic.monthly
                  apple com.example.pro.monthly
                """)
        var subscription = purchase(.autoRenewable, state: .active)
        subscription.autoRenewProductID = "com.example.basic.monthly"
        let pro = try #require(policy.capabilityID(named: "pro"))
        let basic = try #require(policy.capabilityID(named: "basic"))
        #expect(
            policy.decision(for: subscription, capability: pro, at: 1_500_000)
                == .allowed(untilMilliseconds: Self.expiry))
        #expect(
            policy.decision(for: subscription, capability: basic, at: 1_500_000)
                == .allowed(untilMilliseconds: Self.expiry))
        // Once it has renewed into the cheaper product, the record names it and pro ends.
        subscription.productID = "com.example.basic.monthly"
        subscription.autoRenewProductID = nil
        #expect(policy.decision(for: subscription, capability: pro, at: 1_500_000) == .denied(.noGrant))
    }

    @Test("an upgrade takes effect at once: Apple changes the product, Google replaces the purchase")
    func upgrade() throws {
        let policy = try ProductPolicy(
            parsing: """
                capability premium
                  apple com.example.premium.monthly
                  google premium_subscription
                capability basic
                  apple com.example.basic.monthly
                  google basic_subscription
                """)
        let premium = try #require(policy.capabilityID(named: "premium"))
        let basic = try #require(policy.capabilityID(named: "basic"))
        // Apple: the subscription keeps its original transaction and carries the new product.
        var apple = purchase(.autoRenewable, state: .active, product: "com.example.basic.monthly")
        #expect(policy.decision(for: apple, capability: premium, at: 1_200_000) == .denied(.noGrant))
        apple.productID = "com.example.premium.monthly"
        #expect(
            policy.decision(for: apple, capability: premium, at: 1_200_000) == .allowed(untilMilliseconds: Self.expiry))
        #expect(policy.decision(for: apple, capability: basic, at: 1_200_000) == .denied(.noGrant))
        // Google: a new token replaces the old one, which stops granting although its period ran longer.
        var old = purchase(
            .autoRenewable, state: .active, product: "basic_subscription", expires: 3_000_000, store: .google,
            id: "old-token")
        old.replacedByStoreID = "new-token"
        var new = purchase(
            .autoRenewable, state: .active, product: "premium_subscription", expires: 2_600_000, store: .google,
            id: "new-token")
        new.replacesStoreID = "old-token"
        #expect(policy.decision(for: old, capability: basic, at: 1_200_000) == .denied(.expired))
        #expect(policy.decision(for: new, capability: premium, at: 1_200_000) == .allowed(untilMilliseconds: 2_600_000))
        #expect(
            policy.decision(for: [old, new], capability: "basic", at: 1_200_000) == .denied(.expired))
        #expect(
            policy.decision(for: [old, new], capability: "premium", at: 1_200_000)
                == .allowed(untilMilliseconds: 2_600_000))
    }

    @Test("family-shared access follows the owner's dates and ends at REVOKE")
    func familySharing() {
        var shared = purchase(.autoRenewable, state: .active)
        shared.ownership = .familyShared
        #expect(rules.decision(for: shared, at: 1_500_000) == .allowed(untilMilliseconds: Self.expiry))
        shared.state = .revoked
        shared.revokedTimeMilliseconds = 1_600_000
        #expect(rules.decision(for: shared, at: 1_500_000) == .allowed(untilMilliseconds: 1_600_000))
        #expect(rules.decision(for: shared, at: 1_600_000) == .denied(.revoked))
    }

    @Test("defaults follow docs/stores.md; expired, revoked and pending can never be allowed")
    func defaults() {
        let allowed = SubscriptionState.allCases.filter { AccessRules.default.allows($0) }
        #expect(allowed == [.active, .cancelled, .gracePeriod])
        #expect(SubscriptionState.allCases.filter { !AccessRules.canAllow($0) } == [.expired, .revoked, .pending])
        #expect(
            AccessRules.default.description
                == "active yes, cancelled yes, grace_period yes, billing_retry no, account_hold no, paused no, "
                + "expired no, revoked no, pending no")
        let changed = AccessRules.default.setting(.billingRetry, allowed: true).setting(.gracePeriod, allowed: false)
        #expect(changed.allows(.billingRetry))
        #expect(!changed.allows(.gracePeriod))
        #expect(changed.allows(.active))
        #expect(changed != AccessRules.default)
        #expect(changed.setting(.billingRetry, allowed: false).setting(.gracePeriod, allowed: true) == .default)
    }
}
