import Foundation
import GooglePlay
import Model
import Testing

@Suite("Google Play lifecycle in the shared model")
struct GooglePlayLifecycleTests {
    /// One real (notification, subscriptionsv2.get answer) pair.
    struct Scenario: Sendable, CustomTestStringConvertible {
        let index: Int
        let notificationType: Int
        let token: String
        let packageName: String
        let eventTime: Int64
        let purchase: SubscriptionPurchaseV2
        /// The answer as JSON, for the expectations (read independently of the decoder).
        let raw: [String: any Sendable]
        var testDescription: String {
            "scenario \(index) (RTDN \(notificationType), \(raw["subscriptionState"] as? String ?? "?"))"
        }
    }

    static func scenarios() -> [Scenario] {
        guard GoogleFixtures.available,
            let data = try? GoogleFixtures.data("subscriptionsv2/rtdn-and-state-60-scenarios.json"),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let list = root["scenarios"] as? [[String: Any]]
        else { return [] }
        return list.enumerated().compactMap { index, entry in
            guard let event = entry["rtdn_event"] as? [String: Any],
                let notification = event["subscriptionNotification"] as? [String: Any],
                let state = entry["current_state"] as? [String: Any],
                let stateData = try? JSONSerialization.data(withJSONObject: state),
                let purchase = try? JSONDecoder().decode(SubscriptionPurchaseV2.self, from: stateData)
            else { return nil }
            return Scenario(
                index: index + 1, notificationType: notification["notificationType"] as? Int ?? 0,
                token: notification["purchaseToken"] as? String ?? "",
                packageName: event["packageName"] as? String ?? "",
                eventTime: Int64(event["eventTimeMillis"] as? String ?? "") ?? 0, purchase: purchase,
                raw: Self.sendable(state))
        }
    }

    static func sendable(_ object: [String: Any]) -> [String: any Sendable] {
        var out: [String: any Sendable] = [:]
        for (key, value) in object {
            switch value {
            case let text as String: out[key] = text
            case let nested as [String: Any]: out[key] = sendable(nested)
            case let list as [[String: Any]]: out[key] = list.map(sendable)
            default: out[key] = "\(value)"
            }
        }
        return out
    }

    /// The expected state, written from the reference table in docs/stores.md.
    static let expectedState: [String: SubscriptionState] = [
        "SUBSCRIPTION_STATE_ACTIVE": .active, "SUBSCRIPTION_STATE_CANCELED": .cancelled,
        "SUBSCRIPTION_STATE_IN_GRACE_PERIOD": .gracePeriod, "SUBSCRIPTION_STATE_ON_HOLD": .accountHold,
        "SUBSCRIPTION_STATE_EXPIRED": .expired,
    ]

    @Test(
        "all 60 real answers decode",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)))
    func allDecode() {
        #expect(Self.scenarios().count == 60)
    }

    @Test(
        "each real answer normalizes to its state, expiry, auto-renew, acknowledgement and lineage",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)),
        arguments: scenarios())
    func normalizes(_ scenario: Scenario) throws {
        // Judged at the moment of the notification, as the backend saw it.
        let at = Date(timeIntervalSince1970: Double(scenario.eventTime) / 1000)
        let subscription = try GooglePlayLifecycle.subscription(
            scenario.purchase, token: scenario.token, packageName: scenario.packageName, storeTime: scenario.eventTime,
            now: at)
        let raw = scenario.raw
        let item = try #require((raw["lineItems"] as? [[String: any Sendable]])?.first)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expiry = try #require(formatter.date(from: item["expiryTime"] as? String ?? ""))
        #expect(subscription.expiresTimeMilliseconds == Int64((expiry.timeIntervalSince1970 * 1000).rounded()))
        var expected = try #require(Self.expectedState[raw["subscriptionState"] as? String ?? ""])
        if expected == .cancelled && expiry <= at { expected = .expired }
        #expect(subscription.state == expected)
        let plan = item["autoRenewingPlan"] as? [String: any Sendable]
        #expect(subscription.autoRenew == ["1", "true"].contains(plan?["autoRenewEnabled"] as? String ?? ""))
        #expect(
            subscription.acknowledged
                == (raw["acknowledgementState"] as? String == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
        #expect(subscription.replacesStoreID == raw["linkedPurchaseToken"] as? String)
        #expect(subscription.key == SubscriptionKey(store: .google, environment: .sandbox, storeID: scenario.token))
        #expect(subscription.productID == "session_pro")
        #expect(subscription.basePlanID == (item["offerDetails"] as? [String: any Sendable])?["basePlanId"] as? String)
        #expect(subscription.bundleOrPackage == "network.loki.messenger")
        if expected == .gracePeriod {
            #expect(subscription.graceExpiresTimeMilliseconds == subscription.expiresTimeMilliseconds)
        }
    }

    @Test(
        "the linked-token pair: the new token continues the replaced one, which ended by replacement",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)))
    func lineage() throws {
        func load(_ name: String) throws -> (String, SubscriptionPurchaseV2, Int64) {
            let object = try #require(
                try JSONSerialization.jsonObject(with: try GoogleFixtures.data(name)) as? [String: Any])
            let event = try #require(object["developerNotification"] as? [String: Any])
            let token = try #require((event["subscriptionNotification"] as? [String: Any])?["purchaseToken"] as? String)
            let answer = try JSONSerialization.data(
                withJSONObject: try #require(object["subscriptionsv2_get_response"]))
            return (
                token, try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: answer),
                Int64(event["eventTimeMillis"] as? String ?? "") ?? 0
            )
        }
        let (newToken, newer, newTime) = try load("subscriptionsv2/10_rtdn4_PURCHASED__ACTIVE_linkedPurchaseToken.json")
        let (oldToken, older, oldTime) = try load(
            "subscriptionsv2/11_rtdn13_EXPIRED__EXPIRED_replacementCancellation.json")
        let continued = try GooglePlayLifecycle.subscription(
            newer, token: newToken, packageName: "network.loki.messenger", storeTime: newTime,
            now: Date(timeIntervalSince1970: Double(newTime) / 1000))
        let replaced = try GooglePlayLifecycle.subscription(
            older, token: oldToken, packageName: "network.loki.messenger", storeTime: oldTime,
            now: Date(timeIntervalSince1970: Double(oldTime) / 1000))
        #expect(continued.replacesStoreID == oldToken)
        #expect(continued.state == .active)
        #expect(replaced.state == .expired)
        #expect(older.canceledStateContext?.replacementCancellation != nil)
    }

    @Test("every documented notification code maps to its event; others are recorded as other")
    func eventKinds() {
        let expected: [Int: EventKind] = [
            1: .billingRecovered, 2: .renewed, 3: .renewalDisabled, 4: .purchased, 5: .accountHold,
            6: .gracePeriodStarted, 7: .renewalEnabled, 8: .priceChange, 9: .renewalExtended, 10: .paused,
            11: .pauseScheduled, 12: .revoked, 13: .expired, 17: .productChanged, 18: .renewalDisabled,
            19: .priceChange,
            20: .pendingCancelled, 22: .priceChange, 14: .other, 21: .other, 99: .other,
        ]
        for (code, kind) in expected {
            #expect(GooglePlayLifecycle.eventKind(subscriptionNotificationType: code) == kind, "\(code)")
        }
    }

    @Test(
        "a cancelled subscription keeps access until expiry, then is expired; paused and pending are their own states")
    func statesAtTime() throws {
        var purchase = SubscriptionPurchaseV2()
        purchase.subscriptionState = "SUBSCRIPTION_STATE_CANCELED"
        var item = SubscriptionPurchaseV2.LineItem()
        item.productId = "pro"
        item.expiryTime = "2030-01-01T00:00:00Z"
        purchase.lineItems = [item]
        func state(at seconds: Double) throws -> SubscriptionState? {
            try GooglePlayLifecycle.subscription(
                purchase, token: "t", packageName: "p", storeTime: 1, now: Date(timeIntervalSince1970: seconds)
            ).state
        }
        #expect(try state(at: 1_800_000_000) == .cancelled)
        #expect(try state(at: 1_900_000_000) == .expired)
        purchase.subscriptionState = "SUBSCRIPTION_STATE_PAUSED"
        #expect(try state(at: 1_800_000_000) == .paused)
        purchase.subscriptionState = "SUBSCRIPTION_STATE_PENDING"
        #expect(try state(at: 1_800_000_000) == .pending)
        purchase.subscriptionState = "SUBSCRIPTION_STATE_UNSPECIFIED"
        #expect(throws: GooglePlayLifecycle.Incomplete.self) { _ = try state(at: 1_800_000_000) }
        #expect(GooglePlayLifecycle.millis("2025-10-10T02:56:07.125Z") == 1_760_064_967_125)
        #expect(GooglePlayLifecycle.millis("2025-10-10T02:56:07Z") == 1_760_064_967_000)
    }
}
