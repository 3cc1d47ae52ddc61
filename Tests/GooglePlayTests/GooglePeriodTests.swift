import Foundation
import GooglePlay
import Model
import Testing

/// The Google period model as pure values: a period per order and line item, versions of one
/// order combined whatever their order, starts worked out from the order sequence, and the 60
/// real RTDN and subscriptionsv2 pairs giving the same periods in every order.
@Suite("Google Play periods by order")
struct GooglePeriodTests {
    static let minute: Int64 = 60_000

    static func item(
        _ product: String, expiry: Int64, order: String?, autoRenew: Bool = true, prepaid: Bool = false
    ) -> SubscriptionPurchaseV2.LineItem {
        var item = SubscriptionPurchaseV2.LineItem()
        item.productId = product
        item.expiryTime = rfc3339(expiry)
        item.latestSuccessfulOrderId = order
        if prepaid {
            item.prepaidPlan = .init()
        } else {
            var plan = SubscriptionPurchaseV2.LineItem.AutoRenewingPlan()
            plan.autoRenewEnabled = autoRenew
            item.autoRenewingPlan = plan
        }
        return item
    }

    static func purchase(_ state: String, start: Int64, items: [SubscriptionPurchaseV2.LineItem])
        -> SubscriptionPurchaseV2
    {
        var purchase = SubscriptionPurchaseV2()
        purchase.subscriptionState = "SUBSCRIPTION_STATE_\(state)"
        purchase.startTime = rfc3339(start)
        purchase.lineItems = items
        purchase.latestOrderId = items.first?.latestSuccessfulOrderId
        return purchase
    }

    static func rfc3339(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Every version folded into one per period id, as the ledger keeps them, in the given order.
    static func fold(_ versions: [Period]) -> [Period] {
        var byID: [String: Period] = [:]
        for version in versions {
            byID[version.periodID] = byID[version.periodID].map { Period.combined($0, version) } ?? version
        }
        return Period.googleAccessPeriods(Array(byID.values))
    }

    @Test("a base plan with an add-on: one period per line item for the one order, keyed order/product")
    func lineItems() {
        let start: Int64 = 1_000 * Self.minute
        let purchase = Self.purchase(
            "ACTIVE", start: start,
            items: [
                Self.item("pro", expiry: start + 30 * Self.minute, order: "GPA.1-2-3-4"),
                Self.item("extra_storage", expiry: start + 30 * Self.minute, order: "GPA.1-2-3-4", autoRenew: false),
            ])
        let periods = GooglePlayLifecycle.periods(purchase, storeTime: start + 1)
        #expect(periods.map(\.periodID) == ["GPA.1-2-3-4/pro", "GPA.1-2-3-4/extra_storage"])
        #expect(periods.allSatisfy { $0.startMilliseconds == start && $0.endMilliseconds == start + 30 * Self.minute })
        #expect(periods.allSatisfy { $0.signedTimeMilliseconds == start + 1 && $0.stoppedTimeMilliseconds == nil })
        let access = Period.googleAccessPeriods(periods)
        #expect(Set(access.map(\.productID)) == ["pro", "extra_storage"])
    }

    @Test("an add-on whose renewal is off is named; an installment plan's commitment and the price are kept")
    func renewalDetails() throws {
        let start: Int64 = 1_000 * Self.minute
        var base = Self.item("pro", expiry: start + 30 * Self.minute, order: "GPA.1-2-3-4")
        var price = SubscriptionPurchaseV2.LineItem.Money()
        price.currencyCode = "EUR"
        price.units = "4"
        price.nanos = 990_000_000
        base.autoRenewingPlan?.recurringPrice = price
        var installments = SubscriptionPurchaseV2.LineItem.AutoRenewingPlan.InstallmentPlan()
        installments.initialCommittedPaymentsCount = 12
        installments.remainingCommittedPaymentsCount = 9
        base.autoRenewingPlan?.installmentDetails = installments
        var purchase = Self.purchase(
            "ACTIVE", start: start,
            items: [
                base,
                Self.item("extra_storage", expiry: start + 30 * Self.minute, order: "GPA.1-2-3-4", autoRenew: false),
            ])
        purchase.regionCode = "DE"
        let subscription = try GooglePlayLifecycle.subscription(
            purchase, token: "t", packageName: "p", storeTime: start, now: Date(timeIntervalSince1970: 60))
        #expect(subscription.productID == "pro" && subscription.autoRenew)
        #expect(subscription.renewalOffProducts == ["extra_storage"])
        #expect(subscription.installmentsCommitted == 12 && subscription.installmentsRemaining == 9)
        #expect(
            subscription.priceMicros == 4_990_000 && subscription.currency == "EUR" && subscription.storefront == "DE")
    }

    @Test("a renewal starts where the previous order's paid time ended; a void of a past order revokes that one only")
    func renewalsAndVoids() {
        let start: Int64 = 1_000 * Self.minute
        let month = 30 * Self.minute
        var versions: [Period] = []
        for (index, order) in ["GPA.9-9-9-9", "GPA.9-9-9-9..0", "GPA.9-9-9-9..1"].enumerated() {
            let purchase = Self.purchase(
                "ACTIVE", start: start,
                items: [Self.item("pro", expiry: start + Int64(index + 1) * month, order: order)])
            versions += GooglePlayLifecycle.periods(purchase, storeTime: start + Int64(index) * month)
        }
        var voided = versions[1]
        voided.revokedTimeMilliseconds = start + 2 * month + 5
        voided.revocationReason = "VOIDED_PURCHASE"
        let access = Self.fold(versions + [voided])
        #expect(access.map(\.startMilliseconds) == [start, start + month, start + 2 * month])
        #expect(access.map(\.endMilliseconds) == [start + month, start + 2 * month, start + 3 * month])
        #expect(access.map(\.revokedTimeMilliseconds) == [nil, start + 2 * month + 5, nil])
    }

    @Test(
        "versions of one order combine in any order: grace moves the end out, on hold and expiry do not, a cancel in grace cuts it, a revocation stays"
    )
    func combinedVersions() {
        let start: Int64 = 1_000 * Self.minute
        let end = start + 5 * Self.minute
        let graceEnd = end + 5 * Self.minute
        func version(_ state: String, _ expiry: Int64, revokedAt: Int64? = nil, at: Int64) -> Period {
            GooglePlayLifecycle.periods(
                Self.purchase(state, start: start, items: [Self.item("pro", expiry: expiry, order: "GPA.5-5-5-5")]),
                storeTime: at, circumstances: .init(revokedAt: revokedAt))[0]
        }
        let active = version("ACTIVE", end, at: start)
        let grace = version("IN_GRACE_PERIOD", graceEnd, at: end + 1)
        let hold = version("ON_HOLD", graceEnd, at: graceEnd + 1)
        let expiredAfterHold = version("EXPIRED", graceEnd + 10 * Self.minute, at: graceEnd + 10 * Self.minute)
        let cancelledInGrace = version("EXPIRED", end + 15_000, at: end + 15_000)
        let revoked = version("EXPIRED", end - 60_000, revokedAt: end - 59_000, at: end - 59_000)
        let laterExpired = version("EXPIRED", end - 60_000, at: end)

        for versions in [[active, grace, hold, expiredAfterHold], [expiredAfterHold, hold, grace, active]] {
            #expect(Self.fold(versions).map(\.endMilliseconds) == [graceEnd])
        }
        for versions in [[active, grace, cancelledInGrace], [cancelledInGrace, grace, active]] {
            #expect(Self.fold(versions).map(\.endMilliseconds) == [end + 15_000])
        }
        for versions in [[active, revoked, laterExpired], [laterExpired, revoked, active], [revoked, laterExpired]] {
            let periods = Self.fold(versions)
            #expect(periods.map(\.endMilliseconds) == [end - 60_000])
            #expect(periods.map(\.revokedTimeMilliseconds) == [end - 60_000])
            #expect(periods.map(\.revocationReason) == [Period.subscriptionRevoked])
        }
    }

    @Test("a pending purchase proves no period; a pending change names no replaced token until it is real")
    func pending() {
        var purchase = Self.purchase(
            "PENDING", start: 0, items: [Self.item("pro", expiry: 5 * Self.minute, order: nil)])
        purchase.linkedPurchaseToken = "old-token"
        #expect(GooglePlayLifecycle.periods(purchase, storeTime: 1).isEmpty)
        #expect(GooglePlayLifecycle.replaces(purchase) == nil)
        purchase.subscriptionState = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
        #expect(GooglePlayLifecycle.replaces(purchase) == nil)
        purchase.subscriptionState = "SUBSCRIPTION_STATE_ACTIVE"
        #expect(GooglePlayLifecycle.replaces(purchase) == "old-token")
    }

    @Test("a revocation of the subscription ends every order's access from then, also an earlier order's")
    func subscriptionRevoked() {
        let start: Int64 = 1_000 * Self.minute
        let first = GooglePlayLifecycle.periods(
            Self.purchase(
                "ACTIVE", start: start, items: [Self.item("pro", expiry: start + 10 * Self.minute, order: "GPA.7")]),
            storeTime: start)
        let second = GooglePlayLifecycle.periods(
            Self.purchase(
                "EXPIRED", start: start, items: [Self.item("pro", expiry: start + 3 * Self.minute, order: "GPA.7..0")]),
            storeTime: start + 3 * Self.minute, circumstances: .init(revokedAt: start + 3 * Self.minute + 200))
        let periods = Self.fold(first + second)
        #expect(periods.first?.revokedTimeMilliseconds == start + 3 * Self.minute)
        #expect(periods.allSatisfy { $0.revokedTimeMilliseconds != nil })
    }

    // MARK: Real data

    struct Scenario {
        var token: String
        var type: Int
        var eventTime: Int64
        var purchase: SubscriptionPurchaseV2
        var raw: String
    }

    static func scenarios() throws -> [Scenario] {
        let data = try GoogleFixtures.data("subscriptionsv2/rtdn-and-state-60-scenarios.json")
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let list = try #require(root["scenarios"] as? [[String: Any]])
        return try list.map { entry in
            let rtdn = try #require(entry["rtdn_event"] as? [String: Any])
            let notification = try #require(rtdn["subscriptionNotification"] as? [String: Any])
            let state = try JSONSerialization.data(withJSONObject: try #require(entry["current_state"]))
            return Scenario(
                token: try #require(notification["purchaseToken"] as? String),
                type: try #require(notification["notificationType"] as? Int),
                eventTime: Int64(rtdn["eventTimeMillis"] as? String ?? "") ?? -1,
                purchase: try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: state),
                raw: String(decoding: state, as: UTF8.self))
        }
    }

    static func versions(_ scenario: Scenario) -> [Period] {
        GooglePlayLifecycle.periods(
            scenario.purchase, storeTime: scenario.eventTime,
            circumstances: .init(
                revokedAt: scenario.type == 12 ? scenario.eventTime : nil,
                recoveredAt: scenario.type == 1 ? scenario.eventTime : nil), raw: scenario.raw)
    }

    @Test(
        "the 60 real RTDN and subscriptionsv2 pairs give the same periods per token in order and in 20 seeded shuffles",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)))
    func realPairsInAnyOrder() throws {
        let scenarios = try Self.scenarios()
        #expect(scenarios.count == 60)
        func timelines(_ order: [Scenario]) -> [String: [Period]] {
            var versions: [String: [Period]] = [:]
            for scenario in order { versions[scenario.token, default: []] += Self.versions(scenario) }
            return versions.mapValues(Self.fold)
        }
        let inOrder = timelines(scenarios)
        #expect(inOrder.count == 18)
        var state: UInt64 = 0x1234_5678
        for _ in 0..<20 {
            var shuffled = scenarios
            for index in stride(from: shuffled.count - 1, to: 0, by: -1) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                shuffled.swapAt(index, Int((state >> 33) % UInt64(index + 1)))
            }
            #expect(timelines(shuffled) == inOrder)
        }

        // On hold, then expired: the paid time ends at the end of grace, not when hold ran out.
        let held = try #require(inOrder.first { $0.key.hasPrefix("jpdlliaaipke") }?.value)
        #expect(held.map(\.endMilliseconds) == [GooglePlayLifecycle.millis("2025-10-10T00:22:29.313Z")])
        // Cancelled in grace: access ends at the cancellation Play reports.
        let cancelled = try #require(inOrder.first { $0.key.hasPrefix("ehkfchpacbic") }?.value)
        #expect(cancelled.map(\.endMilliseconds) == [GooglePlayLifecycle.millis("2025-10-10T01:06:25.090Z")])
        // Revoked during its renewal: every order ends at the revocation, which stays.
        let revoked = try #require(inOrder.first { $0.key.hasPrefix("pnogbppobfdc") }?.value)
        let revokedAt = GooglePlayLifecycle.millis("2025-10-16T02:10:44.089Z")
        #expect(revoked.allSatisfy { ($0.revokedTimeMilliseconds ?? Int64.max) <= revokedAt! })
        // Renewed from grace: one paid run from the purchase to the renewal's end.
        let renewed = try #require(inOrder.first { $0.key.hasPrefix("jflmajbhbddm") }?.value)
        #expect(renewed.count == 1)
        #expect(renewed.first?.startMilliseconds == GooglePlayLifecycle.millis("2025-10-10T00:42:48.626Z"))
        #expect(renewed.first?.endMilliseconds == GooglePlayLifecycle.millis("2025-10-10T00:52:48.269Z"))
        // Recovered from hold: the new order starts at the recovery, not at the old end.
        let recovered = try #require(inOrder.first { $0.key.hasPrefix("fiamkojbeobf") }?.value)
        #expect(recovered.count == 2)
        #expect(recovered.last?.startMilliseconds == 1_760_064_181_132)
    }
}
