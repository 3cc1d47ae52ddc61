import EntitlementService
import Model
import Testing

@Suite("Access decisions combined")
struct AccessDecisionTests {
    static func until(_ time: Int64) -> AccessDecision { .allowed(untilMilliseconds: time) }

    @Test(
        "the union keeps the latest end, no end beats any end, any allowed beats every denial",
        arguments: [
            (until(2_000), until(3_000), until(3_000)),
            (until(3_000), until(2_000), until(3_000)),
            (.allowed(untilMilliseconds: nil), until(3_000), .allowed(untilMilliseconds: nil)),
            (until(3_000), .allowed(untilMilliseconds: nil), .allowed(untilMilliseconds: nil)),
            (until(1_000), .denied(.stateDenies), until(1_000)),
            (.denied(.revoked), until(1_000), until(1_000)),
        ] as [(AccessDecision, AccessDecision, AccessDecision)])
    func allowedUnion(first: AccessDecision, second: AccessDecision, expected: AccessDecision) {
        #expect(first.union(second) == expected)
        #expect(AccessDecision.union([first, second]) == expected)
    }

    @Test(
        "when nothing allows, the most informative denial wins",
        arguments: [
            (AccessDecision.Denial.noGrant, AccessDecision.Denial.expired, AccessDecision.Denial.expired),
            (.revoked, .noGrant, .revoked),
            (.noGrant, .stateDenies, .stateDenies),
            (.expired, .revoked, .revoked),
            (.stateDenies, .revoked, .stateDenies),
            (.expired, .stateDenies, .stateDenies),
            (.unknownCapability, .noGrant, .noGrant),
        ] as [(AccessDecision.Denial, AccessDecision.Denial, AccessDecision.Denial)])
    func deniedUnion(first: AccessDecision.Denial, second: AccessDecision.Denial, expected: AccessDecision.Denial) {
        #expect(AccessDecision.denied(first).union(.denied(second)) == .denied(expected))
        #expect(AccessDecision.denied(second).union(.denied(first)) == .denied(expected))
    }

    @Test("equal decisions do not outrank each other; an empty union is no grant")
    func ties() {
        #expect(!Self.until(5).outranks(Self.until(5)))
        #expect(!AccessDecision.allowed(untilMilliseconds: nil).outranks(.allowed(untilMilliseconds: nil)))
        #expect(!AccessDecision.denied(.expired).outranks(.denied(.expired)))
        #expect(AccessDecision.union([]) == .denied(.noGrant))
        #expect(AccessDecision.union([.denied(.unknownCapability)]) == .denied(.unknownCapability))
    }

    @Test("the wire end is the end, or 0 for no end and for a denial")
    func wire() {
        #expect(Self.until(1_700_000_000_000).wireUntilMilliseconds == 1_700_000_000_000)
        #expect(AccessDecision.allowed(untilMilliseconds: nil).wireUntilMilliseconds == 0)
        #expect(AccessDecision.denied(.revoked).wireUntilMilliseconds == 0)
        #expect(Self.until(7).isAllowed)
        #expect(!AccessDecision.denied(.noGrant).isAllowed)
        #expect(Self.until(7).description == "allowed until 7")
        #expect(AccessDecision.allowed(untilMilliseconds: nil).description == "allowed with no end")
        #expect(AccessDecision.denied(.stateDenies).description == "denied: state_denies")
    }

    @Test("an Apple and a Google subscription to one capability: the later end wins, in either order")
    func acrossStores() throws {
        let policy = try ProductPolicy(
            parsing: """
                capability pro
                  apple com.example.pro.monthly
                  google pro_subscription
                """)
        let apple = Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: "2000000000000001"),
            productID: "com.example.pro.monthly", productKind: .autoRenewable, state: .active,
            purchaseTimeMilliseconds: 1_000, expiresTimeMilliseconds: 5_000)
        let google = Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: "token-1"),
            productID: "pro_subscription", basePlanID: "monthly", productKind: .autoRenewable, state: .cancelled,
            purchaseTimeMilliseconds: 2_000, expiresTimeMilliseconds: 8_000)
        #expect(policy.decision(for: [apple, google], capability: "pro", at: 3_000) == Self.until(8_000))
        #expect(policy.decision(for: [google, apple], capability: "pro", at: 3_000) == Self.until(8_000))
        // Before the Google purchase only Apple's counts; after Google's end both have ended.
        #expect(policy.decision(for: [apple, google], capability: "pro", at: 1_500) == Self.until(5_000))
        #expect(policy.decision(for: [apple, google], capability: "pro", at: 8_000) == .denied(.expired))
        #expect(policy.decision(for: [apple, google], capability: "gold", at: 3_000) == .denied(.unknownCapability))
        #expect(policy.decision(for: [Subscription](), capability: "pro", at: 3_000) == .denied(.noGrant))
    }
}
