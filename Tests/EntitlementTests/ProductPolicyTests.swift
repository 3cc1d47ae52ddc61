import Crypto
import EntitlementService
import Model
import Testing

@Suite("Product policy")
struct ProductPolicyTests {
    static let example = """
        # The example app's policy.
        capability pro
          apple com.example.pro.monthly
          apple com.example.pro.annual
          google pro_subscription                # every base plan
        capability annual_bonus
          google pro_subscription:annual-plan    # one base plan
          apple com.example.pro.annual
        capability lifetime
          apple com.example.lifetime
          google lifetime_unlock

        access grace_period yes   # the default, spelled out
        access billing_retry yes
        access paused no
        """

    static let canonical = """
        capability annual_bonus
        apple com.example.pro.annual
        google pro_subscription:annual-plan
        capability lifetime
        apple com.example.lifetime
        google lifetime_unlock
        capability pro
        apple com.example.pro.annual
        apple com.example.pro.monthly
        google pro_subscription
        access active yes
        access cancelled yes
        access grace_period yes
        access billing_retry yes
        access account_hold no
        access paused no
        access expired no
        access revoked no
        access pending no

        """

    @Test("a full example parses into its capabilities, products, rules and version")
    func fullExample() throws {
        let policy = try ProductPolicy(parsing: Self.example)
        #expect(policy.capabilities == ["annual_bonus", "lifetime", "pro"])
        #expect(policy.capabilityCount == 3)
        #expect(policy.productCount == 6)
        let bonus = try #require(policy.capabilityID(named: "annual_bonus"))
        let lifetime = try #require(policy.capabilityID(named: "lifetime"))
        let pro = try #require(policy.capabilityID(named: "pro"))
        #expect([bonus.rawValue, lifetime.rawValue, pro.rawValue] == [0, 1, 2])
        #expect(policy.capabilityID(named: "Pro") == nil)
        #expect(policy.name(of: pro) == "pro")
        #expect(
            policy.products(granting: pro) == [
                .apple("com.example.pro.annual"), .apple("com.example.pro.monthly"), .google("pro_subscription"),
            ])
        #expect(
            policy.products(granting: bonus) == [
                .apple("com.example.pro.annual"), .google("pro_subscription", basePlan: "annual-plan"),
            ])
        // One product grants several capabilities; several products grant one.
        #expect(
            Array(policy.capabilities(store: .apple, productID: "com.example.pro.annual", basePlanID: nil))
                == [bonus, pro])
        #expect(
            Array(policy.capabilities(store: .apple, productID: "com.example.pro.monthly", basePlanID: nil)) == [pro])
        #expect(Array(policy.capabilities(store: .google, productID: "lifetime_unlock", basePlanID: nil)) == [lifetime])
        #expect(policy.capabilities(store: .apple, productID: "lifetime_unlock", basePlanID: nil).isEmpty)
        #expect(policy.capabilities(store: .google, productID: "com.example.lifetime", basePlanID: nil).isEmpty)
        #expect(policy.access == AccessRules.default.setting(.billingRetry, allowed: true))
        #expect(policy.canonicalText == Self.canonical)
        #expect(policy.version == Digest.sha256Hex(Array(Self.canonical.utf8)))
        #expect(policy.description == "policy \(policy.version.prefix(12)) (3 capabilities, 6 products)")
    }

    @Test("the version depends on what the policy means, not on how the file is written")
    func version() throws {
        let policy = try ProductPolicy(parsing: Self.example)
        let rewritten = try ProductPolicy(
            parsing:
                "access billing_retry yes\r\n"
                + "capability lifetime\r\n\tgoogle lifetime_unlock\r\n\tapple com.example.lifetime\r\n"
                + "capability annual_bonus\n  apple   com.example.pro.annual\n  google pro_subscription:annual-plan\n"
                + "capability pro\ngoogle pro_subscription\napple com.example.pro.annual\n"
                + "apple com.example.pro.monthly\naccess active yes\naccess expired no")
        #expect(rewritten.version == policy.version)
        #expect(rewritten == policy)
        #expect(try ProductPolicy(parsing: policy.canonicalText).version == policy.version)
        let stricter = try ProductPolicy(parsing: Self.example.replacingBillingRetry())
        #expect(stricter.version != policy.version)
        let built = try ProductPolicy(
            capabilities: [
                "pro": [
                    .apple("com.example.pro.monthly"), .apple("com.example.pro.annual"), .google("pro_subscription"),
                ],
                "annual_bonus": [
                    .google("pro_subscription", basePlan: "annual-plan"), .apple("com.example.pro.annual"),
                ],
                "lifetime": [.apple("com.example.lifetime"), .google("lifetime_unlock")],
            ], access: AccessRules.default.setting(.billingRetry, allowed: true))
        #expect(built.version == policy.version)
    }

    @Test("a Google entry without a base plan matches every base plan; one with a base plan only that one")
    func googleBasePlans() throws {
        let policy = try ProductPolicy(
            parsing: """
                capability pro
                  google pro_subscription
                capability yearly
                  google pro_subscription:annual-plan
                  google legacy:annual-plan
                capability family
                  google family_subscription:family-monthly
                  google family_subscription:family-annual
                """)
        let pro = try #require(policy.capabilityID(named: "pro"))
        let yearly = try #require(policy.capabilityID(named: "yearly"))
        let family = try #require(policy.capabilityID(named: "family"))
        func lookup(_ product: String, _ plan: String?) -> [CapabilityID] {
            Array(policy.capabilities(store: .google, productID: product, basePlanID: plan))
        }
        #expect(lookup("pro_subscription", nil) == [pro])
        #expect(lookup("pro_subscription", "monthly") == [pro])
        #expect(lookup("pro_subscription", "annual-plan") == [pro, yearly].sorted())
        #expect(lookup("legacy", "annual-plan") == [yearly])
        #expect(lookup("legacy", "monthly") == [])
        #expect(lookup("legacy", nil) == [])
        #expect(lookup("family_subscription", "family-annual") == [family])
        #expect(lookup("family_subscription", "family-monthly") == [family])
        #expect(lookup("family_subscription", "annual-plan") == [])
        #expect(lookup("unknown", "annual-plan") == [])
        #expect(policy.productCount == 5)
        // Apple's base plan field holds the subscription group, which the policy does not look at.
        let apple = try ProductPolicy(parsing: "capability pro\n apple com.example.pro\n")
        let applePro = try #require(apple.capabilityID(named: "pro"))
        #expect(
            Array(apple.capabilities(store: .apple, productID: "com.example.pro", basePlanID: "21345678")) == [applePro]
        )
        let subscription = Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: "token"),
            productID: "pro_subscription", basePlanID: "annual-plan")
        #expect(Array(policy.capabilities(of: subscription)) == [pro, yearly].sorted())
    }

    @Test("a capability set is sorted, without repeats, and answers membership")
    func capabilitySet() {
        let set = CapabilitySet([CapabilityID(rawValue: 5), CapabilityID(rawValue: 1), CapabilityID(rawValue: 5)])
        #expect(Array(set) == [CapabilityID(rawValue: 1), CapabilityID(rawValue: 5)])
        #expect(set.contains(CapabilityID(rawValue: 5)))
        #expect(!set.contains(CapabilityID(rawValue: 3)))
        #expect(!set.contains(CapabilityID(rawValue: 6)))
        #expect(!CapabilitySet.empty.contains(CapabilityID(rawValue: 0)))
        #expect(set.union(CapabilitySet([CapabilityID(rawValue: 3)])).count == 3)
    }
}

extension String {
    fileprivate func replacingBillingRetry() -> String {
        split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0 == "access billing_retry yes" ? "access billing_retry no" : String($0) }
            .joined(separator: "\n")
    }
}
