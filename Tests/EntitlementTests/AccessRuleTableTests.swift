import EntitlementService
import Model
import Testing

/// Every normalized state × rule (the default, and flipped where a policy may flip it) × instant,
/// with the answer the access rule must give. Times: purchase 1,000,000; paid period ends
/// 2,000,000; grace ends 2,500,000; the revoking rows revoke at 1,800,000.
@Suite("Access rule table")
struct AccessRuleTableTests {
    static let purchase: Int64 = 1_000_000
    static let expiry: Int64 = 2_000_000
    static let graceEnd: Int64 = 2_500_000
    static let revocation: Int64 = 1_800_000

    /// The instants each state is asked about.
    enum Moment: String, CaseIterable, Sendable {
        case beforeStart = "before start"
        case inPeriod = "inside the period"
        case inGrace = "inside grace"
        case afterExpiry = "after expiry and grace"
        case afterRevocation = "after revocation"
        case beforeRevocation = "before a later-known revocation"

        var at: Int64 {
            switch self {
            case .beforeStart: purchase - 1
            case .inPeriod: 1_500_000
            case .inGrace: 2_200_000
            case .afterExpiry: 2_600_000
            case .afterRevocation: 1_900_000
            case .beforeRevocation: 1_500_000
            }
        }

        /// Whether the subscription carries the revocation time.
        var revoked: Bool { self == .afterRevocation || self == .beforeRevocation }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let state: SubscriptionState
        let flipped: Bool
        let ownership: Ownership
        let moment: Moment
        let expected: AccessDecision

        var testDescription: String {
            "\(state) (\(flipped ? "flipped" : "default") rule, \(ownership)) \(moment.rawValue) → \(expected)"
        }
    }

    static let noGrant = AccessDecision.denied(.noGrant)
    static let expired = AccessDecision.denied(.expired)
    static let revoked = AccessDecision.denied(.revoked)
    static let stateDenies = AccessDecision.denied(.stateDenies)
    static func until(_ time: Int64) -> AccessDecision { .allowed(untilMilliseconds: time) }

    /// Per state and rule, the answers in `Moment.allCases` order: before start, inside the
    /// period, inside grace, after expiry, after revocation, before a later-known revocation.
    static let table: [(SubscriptionState, flipped: Bool, [AccessDecision])] = [
        (.active, false, [noGrant, until(expiry), expired, expired, revoked, until(revocation)]),
        (.active, true, [noGrant, stateDenies, stateDenies, stateDenies, revoked, stateDenies]),
        (.cancelled, false, [noGrant, until(expiry), expired, expired, revoked, until(revocation)]),
        (.cancelled, true, [noGrant, stateDenies, stateDenies, stateDenies, revoked, stateDenies]),
        (.gracePeriod, false, [noGrant, until(graceEnd), until(graceEnd), expired, revoked, until(revocation)]),
        (.gracePeriod, true, [noGrant, stateDenies, stateDenies, stateDenies, revoked, stateDenies]),
        (.billingRetry, false, [noGrant, stateDenies, stateDenies, stateDenies, revoked, stateDenies]),
        (.billingRetry, true, [noGrant, until(graceEnd), until(graceEnd), expired, revoked, until(revocation)]),
        (.accountHold, false, [noGrant, stateDenies, stateDenies, stateDenies, revoked, stateDenies]),
        (.accountHold, true, [noGrant, until(graceEnd), until(graceEnd), expired, revoked, until(revocation)]),
        (.paused, false, [noGrant, stateDenies, stateDenies, stateDenies, revoked, stateDenies]),
        (.paused, true, [noGrant, until(graceEnd), until(graceEnd), expired, revoked, until(revocation)]),
        (.expired, false, [noGrant, expired, expired, expired, revoked, expired]),
        // Revoked without a time denies at once; with a later-known time it was in force before it.
        (.revoked, false, [noGrant, revoked, revoked, revoked, revoked, until(revocation)]),
        (.pending, false, [noGrant, stateDenies, stateDenies, stateDenies, revoked, stateDenies]),
    ]

    static let rows: [Row] = table.flatMap { state, flipped, answers in
        [Ownership.purchased, .familyShared].flatMap { ownership in
            zip(Moment.allCases, answers).map { moment, expected in
                Row(state: state, flipped: flipped, ownership: ownership, moment: moment, expected: expected)
            }
        }
    }

    @Test("the table covers every state, both rules where a policy may flip them, and every moment")
    func coverage() {
        #expect(Set(Self.table.map(\.0)) == Set(SubscriptionState.allCases))
        for (state, flipped, answers) in Self.table {
            #expect(answers.count == Moment.allCases.count)
            #expect(!flipped || AccessRules.canAllow(state))
        }
        let flippable = SubscriptionState.allCases.filter(AccessRules.canAllow)
        #expect(Set(Self.table.filter(\.flipped).map(\.0)) == Set(flippable))
        #expect(Self.rows.count == 15 * 6 * 2)
    }

    @Test("each state, rule and moment gives the specified answer", arguments: rows)
    func answer(row: Row) {
        let defaults = AccessRules.default
        let rules = row.flipped ? defaults.setting(row.state, allowed: !defaults.allows(row.state)) : defaults
        let subscription = Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: "2000000000000001"),
            productID: "com.example.pro.monthly", productKind: .autoRenewable, state: row.state,
            ownership: row.ownership, purchaseTimeMilliseconds: Self.purchase, expiresTimeMilliseconds: Self.expiry,
            graceExpiresTimeMilliseconds: Self.graceEnd,
            revokedTimeMilliseconds: row.moment.revoked ? Self.revocation : nil)
        #expect(rules.decision(for: subscription, at: row.moment.at) == row.expected)
    }
}
