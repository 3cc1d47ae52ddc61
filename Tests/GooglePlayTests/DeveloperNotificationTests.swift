import Foundation
import GooglePlay
import Testing

@Suite("Real-time Developer Notifications")
struct DeveloperNotificationTests {
    static func decode(_ text: String) throws(PubSubPushDecodingError) -> DeveloperNotification {
        try DeveloperNotification(json: Array(text.utf8))
    }

    /// `{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1700000000123",<kind>}`.
    static func notification(_ kind: String) -> String {
        #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1700000000123",\#(kind)}"#
    }

    @Test("a subscription notification decodes")
    func subscription() throws {
        let notification = try Self.decode(
            Self.notification(
                #""subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"token-1","subscriptionId":"monthly"}"#
            ))
        #expect(
            notification
                == DeveloperNotification(
                    version: "1.0", packageName: "com.example.app", eventTimeMillis: 1_700_000_000_123,
                    kind: .subscription(
                        SubscriptionNotification(
                            version: "1.0", notificationType: .purchased, purchaseToken: "token-1",
                            subscriptionId: "monthly"))))
        #expect(notification.eventTime == Date(timeIntervalSince1970: 1_700_000_000.123))
    }

    @Test("a subscription notification without subscriptionId, and with an unknown type, decodes")
    func subscriptionUnknownType() throws {
        let notification = try Self.decode(
            Self.notification(
                #""subscriptionNotification":{"version":"1.0","notificationType":99,"purchaseToken":"token-1"}"#))
        guard case .subscription(let subscription) = notification.kind else {
            Issue.record("not a subscription notification: \(notification.kind)")
            return
        }
        #expect(subscription.subscriptionId == nil)
        #expect(subscription.notificationType == SubscriptionNotificationType(rawValue: 99))
        #expect(!subscription.notificationType.isKnown)
        #expect(subscription.notificationType.name == nil)
        #expect(subscription.notificationType.description == "UNKNOWN(99)")
    }

    @Test("a one-time product notification decodes, unknown types included")
    func oneTimeProduct() throws {
        let notification = try Self.decode(
            Self.notification(
                #""oneTimeProductNotification":{"version":"1.0","notificationType":2,"purchaseToken":"token-2","sku":"coins_100"}"#
            ))
        #expect(
            notification.kind
                == .oneTimeProduct(
                    OneTimeProductNotification(
                        version: "1.0", notificationType: .canceled, purchaseToken: "token-2", sku: "coins_100")))
        let purchased = OneTimeProductNotification.NotificationType(rawValue: 1)
        #expect(purchased == .purchased && purchased.isKnown && purchased.description == "ONE_TIME_PRODUCT_PURCHASED")
        #expect(OneTimeProductNotification.NotificationType.canceled.description == "ONE_TIME_PRODUCT_CANCELED")

        let unknown = try Self.decode(
            Self.notification(
                #""oneTimeProductNotification":{"version":"1.0","notificationType":3,"purchaseToken":"t","sku":"s"}"#))
        guard case .oneTimeProduct(let product) = unknown.kind else {
            Issue.record("not a one-time product notification: \(unknown.kind)")
            return
        }
        #expect(!product.notificationType.isKnown)
        #expect(product.notificationType.description == "UNKNOWN(3)")
    }

    @Test("a voided purchase notification decodes, unknown types included")
    func voidedPurchase() throws {
        let notification = try Self.decode(
            Self.notification(
                #""voidedPurchaseNotification":{"purchaseToken":"token-3","orderId":"GPA.1234-5678-9012-34567","productType":1,"refundType":2}"#
            ))
        #expect(
            notification.kind
                == .voidedPurchase(
                    VoidedPurchaseNotification(
                        purchaseToken: "token-3", orderId: "GPA.1234-5678-9012-34567", productType: .subscription,
                        refundType: .partialRefund)))
        #expect(VoidedPurchaseNotification.ProductType.oneTime.rawValue == 2)
        #expect(VoidedPurchaseNotification.RefundType.fullRefund.rawValue == 1)
        #expect(VoidedPurchaseNotification.ProductType.subscription.description == "PRODUCT_TYPE_SUBSCRIPTION")
        #expect(
            VoidedPurchaseNotification.RefundType.partialRefund.description
                == "REFUND_TYPE_QUANTITY_BASED_PARTIAL_REFUND")

        let unknown = try Self.decode(
            Self.notification(
                #""voidedPurchaseNotification":{"purchaseToken":"t","orderId":"o","productType":3,"refundType":4}"#))
        guard case .voidedPurchase(let voided) = unknown.kind else {
            Issue.record("not a voided purchase notification: \(unknown.kind)")
            return
        }
        #expect(!voided.productType.isKnown && voided.productType.description == "UNKNOWN(3)")
        #expect(!voided.refundType.isKnown && voided.refundType.description == "UNKNOWN(4)")
    }

    @Test("a test notification decodes; eventTimeMillis may also be a JSON integer")
    func test() throws {
        let notification = try Self.decode(
            #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":1700000000123,"testNotification":{"version":"1.0"},"futureMember":{"x":1}}"#
        )
        #expect(notification.kind == .test(TestNotification(version: "1.0")))
        #expect(notification.eventTimeMillis == 1_700_000_000_123)
    }

    @Test("a notification of none of the known kinds decodes as .unknown (recorded and acknowledged, not refused)")
    func unknownKind() throws {
        for json in [
            #"{"version":"1.0","packageName":"p","eventTimeMillis":"1"}"#,
            #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","newKindNotification":{"a":1}}"#,
        ] {
            let notification = try Self.decode(json)
            #expect(
                notification.kind == .unknown && notification.packageName == "p" && notification.eventTimeMillis == 1)
        }
    }

    @Test("every subscription notification type in docs/stores.md is named, and no other")
    func subscriptionTypes() {
        let known = SubscriptionNotificationType.known
        #expect(known.map(\.type.rawValue) == Array(1...13) + [17, 18, 19, 20, 22])
        #expect(known.allSatisfy { $0.type.isKnown && $0.type.name == $0.name && $0.type.description == $0.name })
        #expect(SubscriptionNotificationType.recovered.name == "SUBSCRIPTION_RECOVERED")
        #expect(SubscriptionNotificationType.priceChangeConfirmed.rawValue == 8)
        #expect(SubscriptionNotificationType.pendingPurchaseCanceled.rawValue == 20)
        #expect(
            SubscriptionNotificationType.priceStepUpConsentUpdated.name == "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED")
        for code in [0, 14, 15, 16, 21, 23, -1] {
            #expect(!SubscriptionNotificationType(rawValue: code).isKnown)
        }
    }

    @Test("a notification encodes back to Google's shape and decodes to the same value")
    func roundTrip() throws {
        let original = DeveloperNotification(
            version: "1.0", packageName: "com.example.app", eventTimeMillis: 42,
            kind: .voidedPurchase(
                VoidedPurchaseNotification(
                    purchaseToken: "t", orderId: "o", productType: .oneTime, refundType: .fullRefund)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = try encoder.encode(original)
        #expect(
            String(decoding: json, as: UTF8.self)
                == #"{"eventTimeMillis":"42","packageName":"com.example.app","version":"1.0","voidedPurchaseNotification":{"orderId":"o","productType":2,"purchaseToken":"t","refundType":1}}"#
        )
        #expect(try DeveloperNotification(json: json) == original)
    }

    @Test(
        "data that is not a notification is refused with a message naming the field",
        arguments: [
            ("not json", PubSubPushDecodingError.Code.notANotification, "the notification is not JSON"),
            ("[1]", .notANotification, "the notification is not a JSON object"),
            (
                #"{"packageName":"p","eventTimeMillis":"1","testNotification":{"version":"1.0"}}"#,
                .notANotification, "the notification has no version"
            ),
            (
                #"{"version":"1.0","eventTimeMillis":"1","testNotification":{"version":"1.0"}}"#,
                .notANotification, "the notification has no packageName"
            ),
            (
                #"{"version":"1.0","packageName":"p","testNotification":{"version":"1.0"}}"#,
                .notANotification, "the notification has no eventTimeMillis"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"soon","testNotification":{"version":"1.0"}}"#,
                .notANotification, "the notification's eventTimeMillis is not a decimal number of milliseconds"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"-5","testNotification":{"version":"1.0"}}"#,
                .notANotification, "the notification's eventTimeMillis is not a decimal number of milliseconds"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":true,"testNotification":{"version":"1.0"}}"#,
                .notANotification, "the notification's eventTimeMillis has the wrong type"
            ),
            (
                #"{"version":"1.0","packageName":7,"eventTimeMillis":"1","testNotification":{"version":"1.0"}}"#,
                .notANotification, "the notification's packageName has the wrong type"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","testNotification":{"version":"1.0"},"subscriptionNotification":{"version":"1.0","notificationType":2,"purchaseToken":"t"}}"#,
                .notANotification,
                "the notification carries more than one kind: subscriptionNotification, testNotification"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","subscriptionNotification":{"version":"1.0","notificationType":2}}"#,
                .notANotification, "the notification has no subscriptionNotification.purchaseToken"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","subscriptionNotification":{"version":"1.0","notificationType":"2","purchaseToken":"t"}}"#,
                .notANotification, "the notification's subscriptionNotification.notificationType has the wrong type"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"t"}}"#,
                .notANotification, "the notification has no oneTimeProductNotification.sku"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","voidedPurchaseNotification":{"purchaseToken":"t","orderId":"o","productType":1}}"#,
                .notANotification, "the notification has no voidedPurchaseNotification.refundType"
            ),
            (
                #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","testNotification":{"version":null}}"#,
                .notANotification, "the notification's testNotification.version is null"
            ),
        ])
    func notANotification(text: String, code: PubSubPushDecodingError.Code, message: String) throws {
        let error = #expect(throws: PubSubPushDecodingError.self) { try Self.decode(text) }
        #expect(error?.code == code)
        #expect(error?.message == message)
    }

    @Test("a notification over the size limit is refused before parsing")
    func tooLarge() throws {
        let text = Self.notification(#""testNotification":{"version":"1.0"}"#)
        let error = #expect(throws: PubSubPushDecodingError.self) {
            try DeveloperNotification(json: Array(text.utf8), maxBytes: 50)
        }
        #expect(error?.code == .tooLarge)
        #expect(error?.message == "the notification is \(text.utf8.count) bytes, more than the 50 accepted")
    }

    @Test(
        "all 60 real notifications of the Play test subscriptions decode as subscription notifications",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)))
    func realNotifications() throws {
        let file = try GoogleFixtures.data("subscriptionsv2/rtdn-and-state-60-scenarios.json")
        let root = try #require(try JSONSerialization.jsonObject(with: file) as? [String: Any])
        let scenarios = try #require(root["scenarios"] as? [[String: Any]])
        #expect(scenarios.count == 60)
        var counts: [Int: Int] = [:]
        for scenario in scenarios {
            let event = try JSONSerialization.data(withJSONObject: try #require(scenario["rtdn_event"]))
            let notification = try DeveloperNotification(json: event)
            #expect(notification.packageName == "network.loki.messenger")
            #expect(notification.version == "1.0")
            guard case .subscription(let subscription) = notification.kind else {
                Issue.record("not a subscription notification: \(notification.kind)")
                continue
            }
            #expect(subscription.notificationType.isKnown)
            #expect(subscription.subscriptionId == "session_pro")
            #expect(!subscription.purchaseToken.isEmpty)
            counts[subscription.notificationType.rawValue, default: 0] += 1
        }
        #expect(counts == [4: 18, 13: 12, 6: 7, 2: 7, 3: 6, 5: 4, 12: 3, 1: 2, 7: 1])
    }
}
