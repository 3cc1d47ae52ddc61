import Foundation
import Model
import Testing
import Wire

@testable import EntitlementService

/// The period model as pure values: which version of a period stands, how periods merge into
/// access periods, the total order of states, and what the access rule answers from periods.
@Suite("Access from verified periods")
struct PeriodAccessTests {
    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000
    static let t0: Int64 = 1_790_000_000_000
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "1000")
    static let account = "7a1c2f0e-3b7d-4d7c-9a57-1b2c3d4e5f60"
    static let policy = try! ProductPolicy(
        parsing: """
            capability pro
              apple pro.monthly
              apple pro.plus
            capability basic
              apple basic.monthly
            capability plus
              apple pro.plus
            capability season
              apple season.pass duration 90d
              apple season.undated
            """)

    /// Month `n` of a monthly chain: [t0 + 30n days, t0 + 30(n+1) days), signed at its charge,
    /// a day before it starts (Apple charges up to 24 hours early).
    static func month(_ n: Int64, product: String = "pro.monthly", revoked: Int64? = nil, signed: Int64? = nil)
        -> Period
    {
        Period(
            periodID: "\(2000 + n)", productID: product, startMilliseconds: t0 + n * 30 * day,
            endMilliseconds: t0 + (n + 1) * 30 * day, revokedTimeMilliseconds: revoked,
            revocationReason: revoked == nil ? nil : "0",
            signedTimeMilliseconds: signed ?? (t0 + n * 30 * day - day), productKind: .autoRenewable)
    }

    /// A pro.plus transaction `id` of a chain from `start` to `end`, signed at `signed` (its start
    /// by default): an upgrade, or the upgrade's renewal.
    static func plus(_ id: String, from start: Int64, to end: Int64, signed: Int64? = nil) -> Period {
        Period(
            periodID: id, productID: "pro.plus", startMilliseconds: start, endMilliseconds: end,
            signedTimeMilliseconds: signed ?? start, productKind: .autoRenewable)
    }

    static func state(
        _ state: SubscriptionState, periods: [Period], storeTime: Int64, product: String = "pro.monthly",
        kind: ProductKind = .autoRenewable, grace: Int64? = nil
    ) -> Subscription {
        let last = periods.last
        return Subscription(
            key: key, accountID: account, productID: product, productKind: kind, state: state,
            purchaseTimeMilliseconds: last?.startMilliseconds, expiresTimeMilliseconds: last?.endMilliseconds,
            graceExpiresTimeMilliseconds: grace, storeTimeMilliseconds: storeTime,
            periods: Period.accessPeriods(periods, clipsAtNextStart: true))
    }

    static func check(_ subscription: Subscription, _ capability: String = "pro", at: Int64) throws
        -> CheckAccessResponse
    {
        let view = EntitlementView()
        view.load([subscription], position: 1)
        return try EntitlementMethods.check(
            CheckAccessRequest(accountID: account, capability: capability, atMilliseconds: at), view: view,
            policy: policy, now: at)
    }

    // MARK: Periods

    @Test("a year of monthly renewals of one product is one access period named by the latest")
    func yearMerges() {
        let periods = (0..<12).map { Self.month($0) }
        let merged = Period.accessPeriods(periods.shuffled(), clipsAtNextStart: true)
        #expect(merged.count == 1)
        #expect(merged[0].startMilliseconds == Self.t0)
        #expect(merged[0].endMilliseconds == Self.t0 + 12 * 30 * Self.day)
        #expect(merged[0].periodID == "2011")
        #expect(merged[0].raw == nil)
    }

    @Test("a refunded period stays its own; the periods around it are untouched")
    func refundSplits() {
        let periods = [Self.month(0), Self.month(1, revoked: Self.t0 + 40 * Self.day), Self.month(2)]
        let merged = Period.accessPeriods(periods, clipsAtNextStart: true)
        #expect(merged.map(\.periodID) == ["2000", "2001", "2002"])
        #expect(merged[1].revokedTimeMilliseconds == Self.t0 + 40 * Self.day)
    }

    @Test("an upgrade's transaction cuts the old period at its start, flagged isUpgraded or not")
    func upgradeClips() {
        let plus = Self.plus("3000", from: Self.t0 + 10 * Self.day, to: Self.t0 + 40 * Self.day)
        let merged = Period.accessPeriods([plus, Self.month(0)], clipsAtNextStart: true)
        #expect(merged.map(\.productID) == ["pro.monthly", "pro.plus"])
        #expect(merged[0].endMilliseconds == Self.t0 + 10 * Self.day)
        // Google line items may overlap: no cut there.
        #expect(
            Period.accessPeriods([plus, Self.month(0)], clipsAtNextStart: false)[0].endMilliseconds
                == Self.t0 + 30 * Self.day)
    }

    @Test("of two versions of a period, the later-signed stands; at one signed time the earlier end, then the hash")
    func periodVersions() {
        let paid = Self.month(3, signed: Self.t0)
        let refunded = Self.month(3, revoked: Self.t0 + 100 * Self.day, signed: Self.t0 + 100 * Self.day)
        #expect(Period.standing(paid, refunded) == refunded)
        #expect(Period.standing(refunded, paid) == refunded)
        let reversed = Self.month(3, signed: Self.t0 + 101 * Self.day)
        #expect(Period.standing(refunded, reversed) == reversed)
        let sameTime = Self.month(3, revoked: Self.t0 + 95 * Self.day, signed: Self.t0)
        #expect(Period.standing(paid, sameTime) == sameTime)
        #expect(Period.standing(sameTime, paid) == sameTime)
        var other = paid
        other.offerType = .introductory
        #expect(Period.standing(paid, other) == Period.standing(other, paid))
    }

    @Test("two states at one store time: the one that ends access sooner wins, in either order")
    func equalStoreTimes() {
        let active = Self.state(.active, periods: [Self.month(0)], storeTime: Self.t0)
        let expired = Self.state(.expired, periods: [Self.month(0)], storeTime: Self.t0)
        #expect(Subscription.replaces(expired, active))
        #expect(!Subscription.replaces(active, expired))
        var cancelled = active
        cancelled.state = .cancelled
        cancelled.autoRenew = false
        // Same access end: the content hash decides, the same way in both orders.
        #expect(Subscription.replaces(cancelled, active) != Subscription.replaces(active, cancelled))
        #expect(Subscription.replaces(active, active))
    }

    // MARK: The rule

    @Test("an early renewal: access runs on through the old period into the new one")
    func earlyRenewal() throws {
        // The renewal was charged 20 hours before the old period ended and starts at its end.
        let renewed = Self.state(
            .active, periods: [Self.month(0), Self.month(1)], storeTime: Self.t0 + 30 * Self.day - 20 * Self.hour)
        for at in [Self.t0 + 30 * Self.day - 20 * Self.hour, Self.t0 + 30 * Self.day - 1, Self.t0 + 30 * Self.day] {
            let answer = try Self.check(renewed, at: at)
            #expect(answer.allowed)
            #expect(answer.untilMilliseconds == Self.t0 + 60 * Self.day)
        }
        #expect(try Self.check(renewed, at: Self.t0 + 60 * Self.day).reason == .expired)
        #expect(try Self.check(renewed, at: Self.t0 - 1).reason == .noGrant)
    }

    @Test("a refund of last quarter's period revokes that period only; today's access stays")
    func refundOfOldPeriod() throws {
        let refundedAt = Self.t0 + 100 * Self.day
        let periods = [
            Self.month(0), Self.month(1, revoked: refundedAt, signed: refundedAt), Self.month(2), Self.month(3),
        ]
        let now = Self.state(.active, periods: periods, storeTime: refundedAt)
        let today = try Self.check(now, at: refundedAt + Self.day)
        #expect(today.allowed)
        #expect(today.untilMilliseconds == Self.t0 + 120 * Self.day)
        // Inside the refunded period: revoked from the refund on, as paid before it.
        #expect(try Self.check(now, at: Self.t0 + 45 * Self.day).allowed)
        #expect(try Self.check(now, at: Self.t0 + 45 * Self.day).untilMilliseconds == Self.t0 + 30 * Self.day * 2)
        // Refunded after it ended: it was paid while it ran, so month 0 runs on into it.
        let afterFirst = try Self.check(now, at: Self.t0 + 10 * Self.day)
        #expect(afterFirst.untilMilliseconds == Self.t0 + 60 * Self.day)
        // A period refunded while it ran: access in it ends at the refund; later months stand.
        let midway = Self.t0 + 70 * Self.day
        let inside = Self.state(
            .active,
            periods: [Self.month(0), Self.month(1), Self.month(2, revoked: midway, signed: midway), Self.month(3)],
            storeTime: midway)
        #expect(try Self.check(inside, at: Self.t0 + 5 * Self.day).untilMilliseconds == midway)
        #expect(try Self.check(inside, at: midway).reason == .revoked)
        #expect(try Self.check(inside, at: Self.t0 + 95 * Self.day).untilMilliseconds == Self.t0 + 120 * Self.day)
    }

    @Test("a refund of the current period ends access at the refund, also for a later at")
    func refundOfCurrentPeriod() throws {
        let refundedAt = Self.t0 + 35 * Self.day
        let periods = [Self.month(0), Self.month(1, revoked: refundedAt, signed: refundedAt)]
        var now = Self.state(.revoked, periods: periods, storeTime: refundedAt)
        now.revokedTimeMilliseconds = refundedAt
        #expect(try Self.check(now, at: refundedAt).reason == .revoked)
        #expect(try Self.check(now, at: refundedAt + Self.day).reason == .revoked)
        #expect(try Self.check(now, at: Self.t0 + 70 * Self.day).reason == .revoked)
        let before = try Self.check(now, at: refundedAt - 1)
        #expect(before.allowed)
        #expect(before.untilMilliseconds == refundedAt)
    }

    @Test("an upgrade: the old product grants until the upgrade, the new one from it")
    func upgrade() throws {
        let plus = Self.plus("3000", from: Self.t0 + 10 * Self.day, to: Self.t0 + 40 * Self.day)
        let basic = Period(
            periodID: "1", productID: "basic.monthly", startMilliseconds: Self.t0 - 30 * Self.day,
            endMilliseconds: Self.t0, productKind: .autoRenewable)
        let now = Self.state(
            .active, periods: [basic, Self.month(0), plus], storeTime: Self.t0 + 10 * Self.day, product: "pro.plus")
        // pro: one run from month 0 through the upgrade to its end.
        let pro = try Self.check(now, at: Self.t0 + 5 * Self.day)
        #expect(pro.allowed)
        #expect(pro.untilMilliseconds == Self.t0 + 40 * Self.day)
        #expect(try Self.check(now, "basic", at: Self.t0 + 5 * Self.day).reason == .expired)
        #expect(try Self.check(now, "basic", at: Self.t0 - Self.day).allowed)
        #expect(try Self.check(now, at: Self.t0 - Self.day).reason == .noGrant)
    }

    @Test("an upgrade after a renewal was charged early: that renewal never starts; the upgrade runs its month")
    func upgradeAfterEarlyRenewal() throws {
        // Month 1 was charged a day before month 0 ended; twelve hours later the customer
        // upgraded to pro.plus, which starts at once (Apple marks month 1 isUpgraded).
        let upgradedAt = Self.t0 + 30 * Self.day - 12 * Self.hour
        let plus = Self.plus("3000", from: upgradedAt, to: upgradedAt + 30 * Self.day)
        let recorded = [Self.month(0), Self.month(1), plus]
        let expected = Period.accessPeriods(recorded, clipsAtNextStart: true)
        #expect(expected.map(\.periodID) == ["2000", "3000"])
        #expect(expected.map(\.endMilliseconds) == [upgradedAt, upgradedAt + 30 * Self.day])
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            #expect(Period.accessPeriods(order.map { recorded[$0] }, clipsAtNextStart: true) == expected)
        }
        // pro.plus renews in turn, charged early; the replaced month 1 (which began inside
        // pro.plus's month) does not drop that renewal.
        let plusRenewal = Self.plus(
            "3001", from: upgradedAt + 30 * Self.day, to: upgradedAt + 60 * Self.day, signed: upgradedAt + 29 * Self.day
        )
        let renewed = Period.accessPeriods((recorded + [plusRenewal]).shuffled(), clipsAtNextStart: true)
        #expect(renewed.map(\.periodID) == ["2000", "3001"])
        #expect(renewed.last?.endMilliseconds == upgradedAt + 60 * Self.day)
        let now = Self.state(.active, periods: recorded, storeTime: upgradedAt, product: "pro.plus")
        // Past month 0's end, what only pro.plus grants still runs, to the upgrade's own end.
        for at in [upgradedAt, Self.t0 + 30 * Self.day, Self.t0 + 31 * Self.day] {
            let plusAnswer = try Self.check(now, "plus", at: at)
            #expect(plusAnswer.allowed)
            #expect(plusAnswer.untilMilliseconds == upgradedAt + 30 * Self.day)
            #expect(plusAnswer.grant?.productID == "pro.plus")
            #expect(try Self.check(now, at: at).untilMilliseconds == upgradedAt + 30 * Self.day)
        }
        #expect(try Self.check(now, "plus", at: upgradedAt - 1).reason == .noGrant)
        #expect(try Self.check(now, at: upgradedAt + 30 * Self.day).reason == .expired)
        // A change at renewal (a downgrade) starts where the old period ends: nothing is dropped.
        let downgraded = Period.accessPeriods(
            [Self.month(0), Self.month(1, product: "basic.monthly")], clipsAtNextStart: true)
        #expect(downgraded.map(\.periodID) == ["2000", "2001"])
    }

    @Test("family sharing revoked while a renewal charged early waits: today's access ends at the REVOKE")
    func familyRevokeBeforeEarlyRenewalStarts() throws {
        // Apple puts the revocation on the newest transaction, month 1, which starts at month 0's end.
        let revokedAt = Self.t0 + 30 * Self.day - 6 * Self.hour
        let recorded = [Self.month(0), Self.month(1, revoked: revokedAt, signed: revokedAt)]
        var shared = Self.state(.revoked, periods: recorded, storeTime: revokedAt)
        shared.ownership = .familyShared
        shared.revokedTimeMilliseconds = revokedAt
        shared.periods = Period.accessPeriods(recorded.reversed(), clipsAtNextStart: true, revocationEndsChain: true)
        #expect(shared.periods.map(\.revokedTimeMilliseconds) == [revokedAt, revokedAt])
        #expect(try Self.check(shared, at: revokedAt).reason == .revoked)
        #expect(try Self.check(shared, at: Self.t0 + 31 * Self.day).reason == .revoked)
        let before = try Self.check(shared, at: revokedAt - 1)
        #expect(before.allowed && before.untilMilliseconds == revokedAt)
        // Put on month 0, the one in force, the REVOKE ends month 1 as well.
        let onCurrent = Period.accessPeriods(
            [Self.month(0, revoked: revokedAt, signed: revokedAt), Self.month(1)], clipsAtNextStart: true,
            revocationEndsChain: true)
        #expect(onCurrent.map(\.revokedTimeMilliseconds) == [revokedAt, revokedAt])
        // The buyer's own refund of a renewal that has not started leaves the paid month.
        var bought = Self.state(.revoked, periods: recorded, storeTime: revokedAt)
        bought.revokedTimeMilliseconds = revokedAt
        let paid = try Self.check(bought, at: revokedAt)
        #expect(paid.allowed && paid.untilMilliseconds == Self.t0 + 30 * Self.day)
        #expect(try Self.check(bought, at: Self.t0 + 30 * Self.day).reason == .revoked)
    }

    @Test(
        "in a family-shared chain a REVOKE ends the periods that run past it; an old refund, sharing again later stand")
    func familyRevocationEndsChain() {
        // Month 0 refunded after it ended (the purchaser's refund of an old transaction); sharing
        // revoked twelve hours before month 2 (charged early) began, on month 2; shared again
        // from month 4.
        let refundedAt = Self.t0 + 40 * Self.day
        let revokedAt = Self.t0 + 60 * Self.day - 12 * Self.hour
        let recorded = [
            Self.month(0, revoked: refundedAt, signed: refundedAt), Self.month(1),
            Self.month(2, revoked: revokedAt, signed: revokedAt), Self.month(4),
        ]
        let shared = Period.accessPeriods(recorded.shuffled(), clipsAtNextStart: true, revocationEndsChain: true)
        #expect(shared.map(\.periodID) == ["2000", "2001", "2002", "2004"])
        #expect(shared.map(\.revokedTimeMilliseconds) == [refundedAt, revokedAt, revokedAt, nil])
        #expect(shared[1].revocationReason == "0")
        // Bought, not shared: each revocation is its own period's.
        let bought = Period.accessPeriods(recorded, clipsAtNextStart: true)
        #expect(bought.map(\.revokedTimeMilliseconds) == [refundedAt, nil, revokedAt, nil])
        // The old refund alone leaves a family member's later months as they were.
        let refundOnly = Period.accessPeriods(
            [recorded[0], Self.month(1), Self.month(2)], clipsAtNextStart: true, revocationEndsChain: true)
        #expect(refundOnly.map(\.revokedTimeMilliseconds) == [refundedAt, nil])
        #expect(refundOnly.last?.endMilliseconds == Self.t0 + 90 * Self.day)
    }

    @Test("an upgrade to a shorter plan that ends where the old period would have: its own renewal stays")
    func upgradeEndingAtOldEnd() {
        // A weekly pro.plus bought on day 23 of a month of pro.monthly ends on day 30, where
        // pro.monthly would have ended; its renewal starts there too.
        let weekly = Self.plus("3000", from: Self.t0 + 23 * Self.day, to: Self.t0 + 30 * Self.day)
        let next = Self.plus("3001", from: Self.t0 + 30 * Self.day, to: Self.t0 + 37 * Self.day)
        let periods = Period.accessPeriods([next, Self.month(0), weekly], clipsAtNextStart: true)
        #expect(periods.map(\.periodID) == ["2000", "3001"])
        #expect(periods.map(\.endMilliseconds) == [Self.t0 + 23 * Self.day, Self.t0 + 37 * Self.day])
    }

    @Test("an at in the past is answered as paid then, though the subscription is expired now")
    func pastAt() throws {
        let now = Self.state(.expired, periods: (0..<6).map { Self.month($0) }, storeTime: Self.t0 + 200 * Self.day)
        let then = try Self.check(now, at: Self.t0 + 45 * Self.day)
        #expect(then.allowed)
        #expect(then.untilMilliseconds == Self.t0 + 180 * Self.day)
        #expect(try Self.check(now, at: Self.t0 + 181 * Self.day).reason == .expired)
    }

    @Test("after the last period the state decides: grace until its end, billing retry denies")
    func afterLastPeriod() throws {
        let end = Self.t0 + 30 * Self.day
        let grace = Self.state(.gracePeriod, periods: [Self.month(0)], storeTime: end, grace: end + 16 * Self.day)
        let inside = try Self.check(grace, at: end - Self.day)
        #expect(inside.untilMilliseconds == end + 16 * Self.day)
        #expect(try Self.check(grace, at: end + Self.day).allowed)
        #expect(try Self.check(grace, at: end + 16 * Self.day).reason == .expired)
        let retry = Self.state(.billingRetry, periods: [Self.month(0)], storeTime: end)
        #expect(try Self.check(retry, at: end - 1).allowed)
        #expect(try Self.check(retry, at: end).reason == .stateDenies)
    }

    @Test("a non-renewing purchase lasts the policy's duration; without one it grants nothing")
    func nonRenewing() throws {
        let bought = Period(
            periodID: "5000", productID: "season.pass", startMilliseconds: Self.t0, productKind: .nonRenewing)
        let pass = Self.state(
            .active, periods: [bought], storeTime: Self.t0, product: "season.pass", kind: .nonRenewing)
        let answer = try Self.check(pass, "season", at: Self.t0 + 89 * Self.day)
        #expect(answer.allowed)
        #expect(answer.untilMilliseconds == Self.t0 + 90 * Self.day)
        #expect(try Self.check(pass, "season", at: Self.t0 + 90 * Self.day).reason == .expired)
        var undatedPeriod = bought
        undatedPeriod.productID = "season.undated"
        let undated = Self.state(
            .active, periods: [undatedPeriod], storeTime: Self.t0, product: "season.undated", kind: .nonRenewing)
        #expect(try Self.check(undated, "season", at: Self.t0 + Self.day).reason == .noGrant)
        let view = EntitlementView()
        view.load([undated, pass], position: 1)
        #expect(view.undatedNonRenewingProducts(policy: Self.policy) == ["apple season.undated"])
    }

    @Test("the policy reads durations in hours, days and weeks, and refuses others by line")
    func policyDurations() throws {
        let policy = try ProductPolicy(
            parsing: "capability a\n  apple x duration 12h\n  google y duration 2w\n  google y:plan duration 3d\n")
        #expect(policy.duration(store: .apple, productID: "x", basePlanID: nil) == 12 * Self.hour)
        #expect(policy.duration(store: .google, productID: "y", basePlanID: "other") == 14 * Self.day)
        #expect(policy.duration(store: .google, productID: "y", basePlanID: "plan") == 3 * Self.day)
        #expect(policy.canonicalText.contains("apple x duration 12h\n"))
        for bad in ["90", "0d", "-1d", "1y", "1.5d", "99999999d"] {
            #expect(throws: PolicyError.self) {
                try ProductPolicy(parsing: "capability a\n  apple x duration \(bad)\n")
            }
        }
        #expect(throws: PolicyError.self) {
            try ProductPolicy(parsing: "capability a\n  apple x duration 1d\ncapability b\n  apple x duration 2d\n")
        }
    }

    @Test("ListEntitlements shows each grant's renewal details; CheckAccess answers stay without them")
    func renewalFields() throws {
        var subscription = Self.state(.active, periods: [Self.month(0)], storeTime: Self.t0)
        subscription.autoRenew = true
        subscription.autoRenewProductID = "pro.plus"
        subscription.renewalTimeMilliseconds = Self.t0 + 30 * Self.day
        subscription.renewalOfferID = "winback-2026"
        subscription.renewalOfferType = .winBack
        subscription.offerType = .freeTrial
        subscription.expirationReason = .priceIncrease
        subscription.inBillingRetry = true
        subscription.storefront = "USA"
        subscription.priceMicros = 9_990_000
        subscription.currency = "USD"
        let view = EntitlementView()
        view.load([subscription], position: 1)
        let listed = try EntitlementMethods.list(
            ListEntitlementsRequest(accountID: Self.account, atMilliseconds: Self.t0 + Self.day), view: view,
            policy: Self.policy, now: Self.t0)
        let grant = try #require(listed.entitlements.first?.grants.first)
        #expect(listed.entitlements.map(\.capability) == ["pro"])
        #expect(grant.renewal == GrantRenewal(subscription))
        #expect(grant.renewal?.autoRenewProductID == "pro.plus" && grant.renewal?.currency == "USD")
        // Another subscriber with the same details, due at the end of another period: one profile.
        var other = Self.state(.active, periods: [Self.month(1)], storeTime: Self.t0)
        other.key.storeID = "2000"
        other.accountID = "b7d2c1a0-3b7d-4d7c-9a57-1b2c3d4e5f61"
        other.autoRenew = true
        other.autoRenewProductID = "pro.plus"
        other.renewalTimeMilliseconds = Self.t0 + 60 * Self.day
        other.renewalOfferID = "winback-2026"
        other.renewalOfferType = .winBack
        other.offerType = .freeTrial
        other.expirationReason = .priceIncrease
        other.inBillingRetry = true
        other.storefront = "USA"
        other.priceMicros = 9_990_000
        other.currency = "USD"
        #expect(view.apply(position: 2, subscription: other))
        #expect(view.renewalProfileCount == 1)
        let otherListed = try EntitlementMethods.list(
            ListEntitlementsRequest(accountID: other.accountID!, atMilliseconds: Self.t0 + 31 * Self.day), view: view,
            policy: Self.policy, now: Self.t0)
        #expect(otherListed.entitlements.first?.grants.first?.renewal == GrantRenewal(other))
        // A later change with other renewal details takes another profile.
        var later = subscription
        later.storeTimeMilliseconds = Self.t0 + 1
        later.autoRenew = false
        later.autoRenewProductID = nil
        later.renewalOfferID = nil
        #expect(view.apply(position: 3, subscription: later))
        let relisted = try EntitlementMethods.list(
            ListEntitlementsRequest(accountID: Self.account, atMilliseconds: Self.t0 + Self.day), view: view,
            policy: Self.policy, now: Self.t0)
        #expect(relisted.entitlements.first?.grants.first?.renewal == GrantRenewal(later))
        #expect(try Self.check(subscription, at: Self.t0 + Self.day).grant?.renewal == nil)
    }

    @Test("the view's records keep the sizes its memory figures rest on")
    func recordSizes() {
        #expect(MemoryLayout<Holding>.stride == 64)
        #expect(MemoryLayout<PeriodRecord>.stride == 32)
    }

    @Test("the rule as a pure function: before, inside, across a gap, and a lifetime purchase")
    func rule() {
        let rules = AccessRules.default
        let periods = [
            AccessInterval(start: 100, end: 200), AccessInterval(start: 200, end: 300),
            AccessInterval(start: 400, end: 500),
        ]
        func decide(_ at: Int64, state: SubscriptionState = .active) -> AccessDecision {
            rules.decision(periods: periods, kind: .autoRenewable, state: state, grace: nil, at: at)
        }
        #expect(decide(99) == .denied(.noGrant))
        #expect(decide(150) == .allowed(untilMilliseconds: 300))
        #expect(decide(350) == .denied(.expired))
        #expect(decide(450) == .allowed(untilMilliseconds: 500))
        #expect(decide(500) == .denied(.expired))
        #expect(decide(150, state: .pending) == .denied(.stateDenies))
        let lifetime = [AccessInterval(start: 100, end: nil)]
        #expect(
            rules.decision(periods: lifetime, kind: .nonConsumable, state: .active, grace: nil, at: 1 << 50)
                == .allowed(untilMilliseconds: nil))
        #expect(
            rules.decision(periods: lifetime, kind: .consumable, state: .active, grace: nil, at: 150)
                == .denied(.noGrant))
    }
}
