import Model
import Testing
import Wire

@testable import LedgerService

/// The rules of a verified state's write as tables: the rows the ledger holds and a request in,
/// the exact writes out (`VerifiedStatePlan`), with no database.
@Suite("Verified state plans")
struct VerifiedStatePlanTests {
    static let at: Int64 = 1_790_000_000_000
    static let day: Int64 = 86_400_000
    static let apple = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000000000001")
    static let google = SubscriptionKey(store: .google, environment: .production, storeID: "token-new")
    static let googleOld = SubscriptionKey(store: .google, environment: .production, storeID: "token-old")

    static func state(
        _ key: SubscriptionKey = apple, _ state: SubscriptionState = .active, storeTime: Int64,
        expires: Int64 = at + 30 * day, order: String? = "1", account: String? = nil, replaces: String? = nil,
        replacedBy: String? = nil
    ) -> Subscription {
        Subscription(
            key: key, accountID: account, productID: "pro", state: state, expiresTimeMilliseconds: expires,
            storeTimeMilliseconds: storeTime, verifiedTimeMilliseconds: at, replacesStoreID: replaces,
            replacedByStoreID: replacedBy, bundleOrPackage: "com.example", latestOrderID: order)
    }

    static func period(
        _ id: String, start: Int64, end: Int64?, signed: Int64? = nil, revoked: Int64? = nil, reason: String? = nil,
        stopped: Int64? = nil, raw: String? = nil
    ) -> Period {
        Period(
            periodID: id, productID: "pro", startMilliseconds: start, endMilliseconds: end,
            revokedTimeMilliseconds: revoked, revocationReason: reason, signedTimeMilliseconds: signed, raw: raw,
            stoppedTimeMilliseconds: stopped)
    }

    static func intent(
        _ subscription: Subscription, periods: [Period] = [], events: [LifecycleEvent] = [], partial: Bool = false,
        notification: String? = nil, key: String = "k1", hash: String = "h1"
    ) -> VerifiedStateIntent {
        VerifiedStateIntent(
            request: RecordVerifiedStateRequest(
                idempotencyKey: key, subscription: subscription, events: events, notificationID: notification,
                periods: periods, partial: partial),
            subscription: subscription, requestHash: hash, verifiedAt: at)
    }

    /// The plan of `intent` over `rows`, with the reads `VerifiedStatePlan.reads` asks for
    /// checked against `reads`.
    static func plan(
        _ intent: VerifiedStateIntent, _ rows: VerifiedStateRows, reads: VerifiedStatePlan.Reads = .init()
    ) throws -> VerifiedStatePlan {
        var fixed = rows
        fixed.periods = [:]
        fixed.facts = nil
        #expect(VerifiedStatePlan.reads(intent, rows: fixed) == reads)
        return try VerifiedStatePlan(intent, rows: rows)
    }

    static func change(
        _ position: UInt64, _ state: Subscription, events: [LifecycleEvent] = [], link: AccountLink? = nil
    )
        -> LedgerWrite
    {
        .appendChange(
            Change(
                position: position, committedTimeMilliseconds: at, kind: .subscription, subscription: state, link: link,
                events: events))
    }

    static func remember(_ response: RecordVerifiedStateResponse, key: String = "k1", hash: String = "h1")
        -> LedgerWrite
    {
        .remember(key: key, requestHash: hash, response: response.serialized(), at: at)
    }

    // MARK: Merge by store time

    @Test("a first state: saved at the next position, its fact recorded, its change and answer")
    func firstState() throws {
        let incoming = Self.state(storeTime: Self.at)
        let plan = try Self.plan(Self.intent(incoming), VerifiedStateRows(lastPosition: 10))
        let fact = try #require(StateFact(incoming))
        let response = RecordVerifiedStateResponse(subscription: incoming, applied: true, replayed: false, position: 11)
        #expect(plan.response == response)
        #expect(
            plan.writes == [
                .recordStateFact(Self.apple, fact), .saveSubscription(incoming, position: 11),
                Self.change(11, incoming), Self.remember(response),
            ])
    }

    @Test(
        "which state stands: the later store time; at one time the one that ends access sooner; partial only over its own transaction",
        arguments: [
            ("later store time", state(storeTime: at + 1, order: "2"), false, true),
            ("earlier store time", state(storeTime: at - 1, order: "0"), false, false),
            ("same time, access ends sooner", state(storeTime: at, expires: at + 29 * day), false, true),
            ("same time, access ends later", state(storeTime: at, expires: at + 31 * day), false, false),
            ("partial, later, same transaction", state(storeTime: at + 1, order: "1"), true, true),
            ("partial, later, another transaction", state(storeTime: at + 1, order: "2"), true, false),
        ])
    func merge(name: String, incoming: Subscription, partial: Bool, applies: Bool) throws {
        let stored = Self.state(storeTime: Self.at, account: "acct-1")
        let rows = VerifiedStateRows(current: stored, linkedAccount: "acct-1", facts: [], lastPosition: 4)
        // An active state's fact, with no intervals known, starts or ends none: the facts are not read.
        let plan = try Self.plan(Self.intent(incoming, partial: partial), rows)
        var standing = applies ? incoming : stored
        standing.accountID = "acct-1"
        let response = RecordVerifiedStateResponse(
            subscription: standing, applied: applies, replayed: false, position: 5)
        #expect(plan.response == response, "\(name)")
        var expected: [LedgerWrite] = partial ? [] : [.recordStateFact(Self.apple, try #require(StateFact(incoming)))]
        if applies { expected.append(.saveSubscription(standing, position: 5)) }
        expected += [Self.change(5, standing), Self.remember(response)]
        #expect(plan.writes == expected, "\(name)")
    }

    // MARK: Idempotency

    @Test("a replay of the same request answers the first response, replayed, and marks its notification processed")
    func replay() throws {
        let first = RecordVerifiedStateResponse(
            subscription: Self.state(storeTime: Self.at), applied: true, replayed: false, position: 3)
        let rows = VerifiedStateRows(
            idempotency: IdempotencyRecord(requestHash: "h1", response: first.serialized()), lastPosition: 9)
        let plan = try Self.plan(Self.intent(Self.state(storeTime: Self.at + 5), notification: "n-1"), rows)
        var replayed = first
        replayed.replayed = true
        #expect(plan.response == replayed)
        #expect(plan.writes == [.markProcessed(store: .apple, notificationID: "n-1")])
    }

    @Test("an idempotency key used with another request, or about a deleted account, is refused")
    func replayRefused() {
        for stored in ["h0", Ledger.deletedRecordPrefix + "h1"] {
            let rows = VerifiedStateRows(
                idempotency: IdempotencyRecord(requestHash: stored, response: []), lastPosition: 9)
            #expect(throws: LedgerError.self) {
                try VerifiedStatePlan(Self.intent(Self.state(storeTime: 1)), rows: rows)
            }
        }
    }

    // MARK: Periods per store

    @Test("Apple periods: the later-signed version stands; the same version again writes nothing")
    func applePeriods() throws {
        let stored = Self.period("p1", start: Self.at, end: Self.at + 30 * Self.day, signed: 100)
        let refund = Self.period(
            "p1", start: Self.at, end: Self.at + 30 * Self.day, signed: 200, revoked: Self.at + Self.day, raw: "jws")
        var bare = refund
        bare.raw = nil
        let incoming = Self.state(Self.apple, .revoked, storeTime: Self.at + Self.day)
        let rows = VerifiedStateRows(periods: [Self.apple: [stored]], facts: nil, lastPosition: 1)
        let reads = VerifiedStatePlan.Reads(periodsOf: [Self.apple], facts: false)
        let plan = try Self.plan(Self.intent(incoming, periods: [refund]), rows, reads: reads)
        #expect(plan.writes.first == .savePeriod(Self.apple, refund))
        #expect(plan.response.subscription?.periods == Period.accessPeriods([bare], clipsAtNextStart: true))

        let again = try Self.plan(
            Self.intent(incoming, periods: [stored]),
            VerifiedStateRows(periods: [Self.apple: [refund]], lastPosition: 1),
            reads: reads)
        #expect(!again.writes.contains { if case .savePeriod = $0 { true } else { false } })
        #expect(again.response.subscription?.periods == [])
    }

    @Test(
        "Google periods: versions of one order are combined, the revocation kept; an expired state with it reads revoked"
    )
    func googlePeriods() throws {
        let stored = Self.period("GPA.1", start: Self.at, end: Self.at + 30 * Self.day, signed: 100)
        let revoked = Self.period(
            "GPA.1", start: Self.at, end: Self.at + 10 * Self.day, signed: 200, revoked: Self.at + 2 * Self.day,
            reason: "refund")
        let incoming = Self.state(Self.google, .expired, storeTime: Self.at + 2 * Self.day)
        let rows = VerifiedStateRows(periods: [Self.google: [stored]], lastPosition: 1)
        let plan = try Self.plan(
            Self.intent(incoming, periods: [revoked]), rows, reads: .init(periodsOf: [Self.google]))
        let combined = Period.combined(stored, revoked)
        #expect(combined.endMilliseconds == Self.at + 30 * Self.day)
        #expect(combined.revokedTimeMilliseconds == Self.at + 2 * Self.day)
        #expect(plan.writes.first == .savePeriod(Self.google, combined))
        let state = try #require(plan.response.subscription)
        #expect(state.state == .revoked)
        #expect(state.revokedTimeMilliseconds == Self.at + 2 * Self.day)
        #expect(state.periods == Period.googleAccessPeriods([combined]))
    }

    // MARK: Google replacement

    @Test("a Play plan change at once cuts the replaced token's periods where the new token's paid time starts")
    func replacementCut() throws {
        let change = Self.at + 10 * Self.day
        let old = Self.period("GPA.old", start: Self.at, end: Self.at + 30 * Self.day, signed: 100)
        let new = Self.period("GPA.new", start: change, end: change + 30 * Self.day, signed: 300)
        let replaced = Self.state(Self.googleOld, storeTime: Self.at, order: "GPA.old", account: "acct-1")
        let incoming = Self.state(Self.google, storeTime: change, order: "GPA.new", replaces: "token-old")
        let rows = VerifiedStateRows(
            replaced: replaced, replacedLinkedAccount: "acct-1",
            periods: [Self.google: [], Self.googleOld: [old]], facts: [], lastPosition: 20)
        let plan = try Self.plan(
            Self.intent(incoming, periods: [new]), rows,
            reads: .init(periodsOf: [Self.google, Self.googleOld]))
        var cut = old
        cut.stoppedTimeMilliseconds = change
        var standing = incoming
        standing.accountID = "acct-1"
        standing.periods = Period.googleAccessPeriods([new])
        var replacedAfter = replaced
        replacedAfter.replacedByStoreID = "token-new"
        replacedAfter.periods = Period.googleAccessPeriods([cut])
        let link = AccountLink(accountID: "acct-1", key: Self.google, linkedTimeMilliseconds: Self.at)
        let response = RecordVerifiedStateResponse(subscription: standing, applied: true, replayed: false, position: 21)
        #expect(
            plan.writes == [
                .savePeriod(Self.google, new), .savePeriod(Self.googleOld, cut),
                .recordStateFact(Self.google, try #require(StateFact(incoming))),
                .saveSubscription(standing, position: 21), Self.change(21, standing, link: link), .insertLink(link),
                .saveSubscription(replacedAfter, position: 22), Self.change(22, replacedAfter), Self.remember(response),
            ])
        #expect(plan.response == response)
    }

    @Test(
        "a Play deferred change (its token first recorded without periods) starts the new paid time where the old one ends"
    )
    func deferredChange() throws {
        let oldEnd = Self.at + 30 * Self.day
        let old = Self.period("GPA.old", start: Self.at, end: oldEnd, signed: 100)
        let new = Self.period("GPA.new", start: Self.at + 10 * Self.day, end: oldEnd + 30 * Self.day, signed: 300)
        let replaced = Self.state(Self.googleOld, storeTime: Self.at, order: "GPA.old", replacedBy: "token-new")
        let pending = Self.state(Self.google, storeTime: Self.at + 10 * Self.day, order: nil, replaces: "token-old")
        let incoming = Self.state(
            Self.google, storeTime: Self.at + 11 * Self.day, order: "GPA.new", replaces: "token-old")
        let rows = VerifiedStateRows(
            current: pending, replaced: replaced, periods: [Self.google: [], Self.googleOld: [old]], facts: [],
            lastPosition: 20)
        let plan = try Self.plan(
            Self.intent(incoming, periods: [new]), rows,
            reads: .init(periodsOf: [Self.google, Self.googleOld]))
        var shifted = new
        shifted.startMilliseconds = oldEnd
        #expect(plan.writes.prefix(2) == [.savePeriod(Self.google, new), .savePeriod(Self.google, shifted)])
        #expect(plan.response.subscription?.periods == Period.googleAccessPeriods([shifted]))
        // The replaced token already names its successor and keeps its periods: no change of its own.
        #expect(!plan.writes.contains(.saveSubscription(replaced, position: 22)))
        #expect(plan.writes.filter { if case .appendChange = $0 { true } else { false } }.count == 1)
    }

    // MARK: Status intervals

    @Test("a passing state's fact with the facts recorded: the status intervals they show are saved")
    func statusIntervals() throws {
        let grace = Self.state(
            Self.apple, .gracePeriod, storeTime: Self.at + 31 * Self.day, expires: Self.at + 30 * Self.day)
        var withGrace = grace
        withGrace.graceExpiresTimeMilliseconds = Self.at + 36 * Self.day
        let active = Self.state(storeTime: Self.at)
        let facts = [try #require(StateFact(active))]
        let rows = VerifiedStateRows(current: active, facts: facts, lastPosition: 2)
        let plan = try Self.plan(Self.intent(withGrace), rows, reads: .init(facts: true))
        let fact = try #require(StateFact(withGrace))
        let intervals = StateFact.intervals(Set(facts + [fact]))
        #expect(!intervals.isEmpty)
        var standing = withGrace
        standing.statusIntervals = intervals
        #expect(plan.response.subscription == standing)
        #expect(
            plan.writes.prefix(2) == [.recordStateFact(Self.apple, fact), .saveSubscription(standing, position: 3)])
    }

    @Test("a failing state's fact where intervals are known: the facts are read and the interval ends at it")
    func intervalEnds() throws {
        var grace = Self.state(Self.apple, .gracePeriod, storeTime: Self.at, expires: Self.at - Self.day)
        grace.graceExpiresTimeMilliseconds = Self.at + 5 * Self.day
        let graceFact = try #require(StateFact(grace))
        grace.statusIntervals = StateFact.intervals([graceFact])
        let expired = Self.state(Self.apple, .expired, storeTime: Self.at + Self.day, expires: Self.at - Self.day)
        let rows = VerifiedStateRows(current: grace, facts: [graceFact], lastPosition: 7)
        let plan = try Self.plan(Self.intent(expired), rows, reads: .init(facts: true))
        let intervals = StateFact.intervals([graceFact, try #require(StateFact(expired))])
        #expect(intervals != grace.statusIntervals)
        #expect(plan.response.subscription?.statusIntervals == intervals)
    }

    @Test("a Play state's fact is at its first event's time; a failing state with no intervals known reads no facts")
    func playFactTime() throws {
        let event = LifecycleEvent(key: Self.google, kind: .expired, storeTimeMilliseconds: Self.at + 5)
        let incoming = Self.state(Self.google, .expired, storeTime: Self.at + 99)
        let plan = try Self.plan(Self.intent(incoming, events: [event]), VerifiedStateRows(lastPosition: 0))
        let fact = try #require(StateFact(incoming, time: Self.at + 5))
        #expect(plan.writes.first == .recordStateFact(Self.google, fact))
        var recorded = event
        recorded.position = 1
        recorded.verifiedTimeMilliseconds = Self.at
        recorded.state = .expired
        #expect(plan.writes.contains(.insertEvent(recorded)))
    }
}
