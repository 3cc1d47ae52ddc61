import Foundation
import Model
import TestSupport
import Testing

@testable import EntitlementService

/// The states that pass as intervals: how the facts of a subscription make them (whatever order
/// they were recorded in), and what access reads inside them.
@Suite("Status intervals: made from facts, read by the access rule")
struct StatusIntervalTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_790_000_000_000

    static func fact(
        _ day: Int64, _ state: SubscriptionState, start: Int64? = nil, statedEnd: Int64? = nil
    ) -> StateFact {
        StateFact(
            storeTimeMilliseconds: t0 + day * Self.day, state: state,
            startMilliseconds: start.map { t0 + $0 * Self.day } ?? (t0 + day * Self.day),
            statedEnd: statedEnd.map { t0 + $0 * Self.day })
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let facts: [StateFact]
        let expected: [StatusInterval]
        var testDescription: String { name }
    }

    static func interval(
        _ state: SubscriptionState, _ start: Int64, _ end: Int64?, shown: Int64, endedByFact: Bool
    ) -> StatusInterval {
        StatusInterval(
            state: state, startMilliseconds: t0 + start * day, endMilliseconds: end.map { t0 + $0 * day },
            shownTimeMilliseconds: t0 + shown * day,
            endedTimeMilliseconds: endedByFact ? end.map { t0 + $0 * day } : nil)
    }

    static let cases: [Case] = [
        Case(
            name: "Apple grace from the old expiry, ended by the recovery before its stated end",
            facts: [
                fact(0, .active), fact(30, .gracePeriod, start: 30, statedEnd: 46),
                fact(33, .gracePeriod, start: 30, statedEnd: 46),
                fact(35, .active, start: 65),
            ],
            expected: [interval(.gracePeriod, 30, 35, shown: 30, endedByFact: true)]),
        Case(
            name: "Apple grace to its stated end, then billing retry from there until the expiry",
            facts: [
                fact(0, .active), fact(30, .gracePeriod, start: 30, statedEnd: 46),
                fact(46, .billingRetry, start: 30), fact(90, .expired, start: 30),
            ],
            expected: [
                interval(.gracePeriod, 30, 46, shown: 30, endedByFact: false),
                interval(.billingRetry, 46, 90, shown: 46, endedByFact: true),
            ]),
        Case(
            name: "a Play pause from the period's end to the resume, sooner than the automatic resume",
            facts: [fact(0, .active), fact(30, .paused, start: 30, statedEnd: 60), fact(40, .active, start: 30)],
            expected: [interval(.paused, 30, 40, shown: 30, endedByFact: true)]),
        Case(
            name: "a Play pause still running: to its stated resume",
            facts: [fact(0, .active), fact(31, .paused, start: 30, statedEnd: 60)],
            expected: [interval(.paused, 30, 60, shown: 31, endedByFact: false)]),
        Case(
            name: "a hold nothing has ended yet is open",
            facts: [fact(0, .active), fact(30, .accountHold, start: 30)],
            expected: [interval(.accountHold, 30, nil, shown: 30, endedByFact: false)]),
        Case(
            name: "a refund of the newest transaction in billing retry, reversed: the retry resumes where it stopped",
            facts: [
                fact(0, .active), fact(30, .gracePeriod, start: 30, statedEnd: 46),
                fact(46, .billingRetry, start: 30), fact(47, .revoked, start: 30), fact(48, .billingRetry, start: 30),
            ],
            expected: [
                interval(.gracePeriod, 30, 46, shown: 30, endedByFact: false),
                interval(.billingRetry, 46, 47, shown: 46, endedByFact: true),
                interval(.billingRetry, 47, nil, shown: 48, endedByFact: false),
            ]),
        Case(
            name: "no passing state, no interval",
            facts: [fact(0, .active), fact(20, .cancelled), fact(30, .expired)],
            expected: []),
    ]

    @Test("intervals from facts, in every order of arrival", arguments: cases)
    func intervals(_ test: Case) {
        #expect(StateFact.intervals(test.facts) == test.expected)
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<20 {
            #expect(StateFact.intervals(test.facts.shuffled(using: &generator)) == test.expected)
        }
    }

    @Test("a passing state's fact: it begins at the expiry, or at its own time when that is sooner")
    func factOfState() throws {
        let key = SubscriptionKey(store: .google, environment: .production, storeID: "token")
        var grace = Subscription(
            key: key, state: .gracePeriod, expiresTimeMilliseconds: Self.t0 + 5 * Self.day,
            graceExpiresTimeMilliseconds: Self.t0 + 5 * Self.day, storeTimeMilliseconds: Self.t0)
        var fact = try #require(StateFact(grace))
        #expect(fact.startMilliseconds == Self.t0 && fact.statedEndMilliseconds == Self.t0 + 5 * Self.day)
        grace.state = .paused
        grace.autoResumeTimeMilliseconds = Self.t0 + 30 * Self.day
        grace.expiresTimeMilliseconds = Self.t0 - Self.day
        fact = try #require(StateFact(grace, time: Self.t0 + 1))
        #expect(fact.storeTimeMilliseconds == Self.t0 + 1 && fact.startMilliseconds == Self.t0 - Self.day)
        #expect(fact.statedEndMilliseconds == Self.t0 + 30 * Self.day)
    }

    static let rules = AccessRules.default

    static func time(_ days: Int64) -> Int64 { t0 + days * day }

    static func period(_ start: Int64, _ end: Int64) -> AccessInterval {
        AccessInterval(start: t0 + start * day, end: t0 + end * day)
    }

    static func span(_ state: SubscriptionState, _ start: Int64, _ end: Int64?) -> StatusSpan {
        StatusSpan(state: state, start: t0 + start * day, end: end.map { t0 + $0 * day })
    }

    static func decide(
        _ periods: [AccessInterval], _ statuses: [StatusSpan], state: SubscriptionState, at day: Int64
    ) -> AccessDecision {
        rules.decision(
            periods: periods, statuses: statuses, kind: .autoRenewable, state: state, grace: nil,
            at: t0 + day * Self.day)
    }

    @Test("the days of a grace that ended in a recovery are allowed, on into the recovered period")
    func graceThenRecovery() {
        let periods = [Self.period(0, 30), Self.period(35, 65)]
        let grace = [Self.span(.gracePeriod, 30, 35)]
        #expect(
            Self.decide(periods, grace, state: .active, at: 32) == .allowed(untilMilliseconds: Self.t0 + 65 * Self.day))
        #expect(
            Self.decide(periods, grace, state: .active, at: 10) == .allowed(untilMilliseconds: Self.t0 + 65 * Self.day))
        // Without the interval the grace days were a gap.
        #expect(Self.decide(periods, [], state: .active, at: 32) == .denied(.expired))
    }

    @Test("a pause denies its days, also under a resumed order chained over it, and ends the run before it")
    func pauseThenResume() {
        // Play's resumed order, chained to the end of the order before it.
        let periods = [Self.period(0, 30), Self.period(30, 70)]
        let pause = [Self.span(.paused, 30, 40)]
        #expect(Self.decide(periods, pause, state: .active, at: 35) == .denied(.stateDenies))
        #expect(
            Self.decide(periods, pause, state: .active, at: 10) == .allowed(untilMilliseconds: Self.t0 + 30 * Self.day))
        #expect(
            Self.decide(periods, pause, state: .active, at: 40) == .allowed(untilMilliseconds: Self.t0 + 70 * Self.day))
        // A pause still running and open-ended: denied from its start on.
        #expect(
            Self.decide([Self.period(0, 30)], [Self.span(.paused, 30, nil)], state: .paused, at: 45)
                == .denied(.stateDenies))
    }

    @Test("billing retry after grace: the grace days allowed, the retry days denied by the state, then expired")
    func graceRetryExpired() {
        let periods = [Self.period(0, 30)]
        let statuses = [Self.span(.gracePeriod, 30, 46), Self.span(.billingRetry, 46, 90)]
        #expect(
            Self.decide(periods, statuses, state: .expired, at: 40)
                == .allowed(untilMilliseconds: Self.t0 + 46 * Self.day))
        #expect(Self.decide(periods, statuses, state: .expired, at: 50) == .denied(.stateDenies))
        #expect(Self.decide(periods, statuses, state: .expired, at: 95) == .denied(.expired))
    }

    @Test("after the last period a revocation reads from its own time: before it the paid time had ended")
    func revocationAfterTheEnd() {
        var refunded = Self.period(0, 30)
        refunded.revoked = Self.time(35)
        for state in [SubscriptionState.revoked, .expired] {
            #expect(Self.decide([refunded], [], state: state, at: 32) == .denied(.expired), "\(state)")
            #expect(Self.decide([refunded], [], state: state, at: 35) == .denied(.revoked), "\(state)")
        }
        #expect(Self.decide([Self.period(0, 30)], [], state: .revoked, at: 32) == .denied(.revoked))
        // The same beside status intervals (a grace after the last period, a hold after it).
        let statuses = [Self.span(.gracePeriod, 30, 31), Self.span(.accountHold, 31, 33)]
        #expect(Self.decide([refunded], statuses, state: .revoked, at: 34) == .denied(.expired))
        #expect(Self.decide([refunded], statuses, state: .revoked, at: 36) == .denied(.revoked))
    }

    @Test("a policy that allows a passing state reads its ended interval as paid time")
    func policyAllowsHold() {
        let rules = AccessRules.default.setting(.accountHold, allowed: true)
        let answer = rules.decision(
            periods: [Self.period(0, 30), Self.period(40, 70)], statuses: [Self.span(.accountHold, 30, 40)],
            kind: .autoRenewable, state: .active, grace: nil, at: Self.t0 + 35 * Self.day)
        #expect(answer == .allowed(untilMilliseconds: Self.t0 + 70 * Self.day))
    }
}
