import Foundation
import HTTP
import Observability
import StoreSimKit
import TestSupport
import Testing

/// The simulated Google Play where Play is hard on a backend: several line items on one order,
/// a new order at every renewal, plan changes at once, after a slow payment or at the period's
/// end, voids of any order and of some units, one-time products, REVOKED then EXPIRED, test
/// purchases, prepaid plans and the voided purchases list's limits. Every answer is checked as
/// the exact JSON the API sends, every push as the verifier authenticates and decodes it.
@Suite("Store simulator: Google Play, as strict as Play")
struct GoogleSimStrictnessTests {
    static let start = GooglePlayWire.start  // 2026-01-01
    static let day = GooglePlayWire.day
    static let january11: Int64 = 1_768_089_600_000
    static let january20: Int64 = 1_768_867_200_000
    static let february: Int64 = 1_769_904_000_000
    static let march: Int64 = 1_772_323_200_000
    static let march3: Int64 = 1_772_496_000_000
    static let april: Int64 = 1_775_001_600_000
    static let may: Int64 = 1_777_593_600_000
    static let may8: Int64 = 1_778_198_400_000
    static let june: Int64 = 1_780_272_000_000
    static let february11: Int64 = 1_770_768_000_000
    static let february13: Int64 = 1_770_940_800_000
    static let active = "SUBSCRIPTION_STATE_ACTIVE"
    static let expired = "SUBSCRIPTION_STATE_EXPIRED"

    /// A line item as the API writes it: `renewing` nil for a prepaid plan (then
    /// `allowExtendAfter`), `expiry` nil for a purchase not paid yet, `order` the latest paid one.
    static func item(
        _ productID: String, plan: String = "monthly", expiry: Int64?, renewing: Bool?, order: String?,
        allowExtendAfter: Int64? = nil
    ) -> [String: Any] {
        var item: [String: Any] = ["productId": productID, "offerDetails": ["basePlanId": plan]]
        if let expiry { item["expiryTime"] = GooglePlayWire.rfc3339(expiry) }
        if let renewing {
            item["autoRenewingPlan"] = renewing ? ["autoRenewEnabled": true] as [String: Any] : [:]
        } else {
            item["prepaidPlan"] =
                allowExtendAfter.map { ["allowExtendAfterTime": GooglePlayWire.rfc3339($0)] as [String: Any] } ?? [:]
        }
        if let order { item["latestSuccessfulOrderId"] = order }
        return item
    }

    /// A `SubscriptionPurchaseV2` as the API writes it.
    static func subscription(
        _ state: String, start: Int64?, items: [[String: Any]], latestOrder: String?, acknowledged: Bool,
        extra: [String: Any] = [:]
    ) -> String {
        var body: [String: Any] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US", "subscriptionState": state,
            "acknowledgementState": acknowledged
                ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
            "lineItems": items,
        ]
        if let start { body["startTime"] = GooglePlayWire.rfc3339(start) }
        if let latestOrder { body["latestOrderId"] = latestOrder }
        body.merge(extra) { $1 }
        return GooglePlayWire.json(body)
    }

    /// A `SubscriptionPurchaseV2` of the one line item `item` as the API writes it; its latest order
    /// is the item's latest paid one.
    private static func subscription(
        _ state: String, start: Int64?, item: [String: Any], acknowledged: Bool, extra: [String: Any] = [:]
    ) -> String {
        subscription(
            state, start: start, items: [item], latestOrder: item["latestSuccessfulOrderId"] as? String,
            acknowledged: acknowledged, extra: extra)
    }

    /// `pro_sub` as the API writes it when bought at the start, acknowledged, and ACTIVE and
    /// renewing until `expiry` on the paid order `order`.
    private static func renewingPro(until expiry: Int64, order: String) -> String {
        subscription(
            active, start: start, item: item("pro_sub", expiry: expiry, renewing: true, order: order),
            acknowledged: true)
    }

    /// The new token of a plan change from `old` as the API writes it, not acknowledged: `productID`
    /// in `state` from `start`, renewing until `expiry` on `order` (each nil before the payment),
    /// with `extra`.
    private static func linkedChange(
        _ productID: String, from old: String, state: String = active, start: Int64?, expiry: Int64?,
        order: String?, extra: [String: Any] = [:]
    ) -> String {
        subscription(
            state, start: start, item: item(productID, expiry: expiry, renewing: true, order: order),
            acknowledged: false, extra: extra.merging(["linkedPurchaseToken": old]) { $1 })
    }

    /// The old token of a plan change as the API writes it: `productID` bought at the start on the
    /// order `base` and acknowledged, EXPIRED by the replacement at `end`, with `extra`.
    private static func replacedByChange(_ productID: String, at end: Int64, base: String, extra: [String: Any] = [:])
        -> String
    {
        subscription(
            expired, start: start, item: item(productID, expiry: end, renewing: false, order: base),
            acknowledged: true, extra: extra.merging(replaced) { $1 })
    }

    static var replaced: [String: Any] { ["canceledStateContext": ["replacementCancellation": [String: Any]()]] }
    static var revokedBySystem: [String: Any] {
        ["canceledStateContext": ["systemInitiatedCancellation": [String: Any]()]]
    }

    /// A one-time product's `ProductPurchase` as the API writes it.
    static func productPurchase(
        state: Int, bought: Int64, order: String?, quantity: Int = 1, refundable: Int? = nil,
        acknowledged: Bool = false, consumed: Bool = false, test: Bool = false
    ) -> String {
        var body: [String: Any] = [
            "kind": "androidpublisher#productPurchase", "purchaseTimeMillis": String(bought), "purchaseState": state,
            "consumptionState": consumed ? 1 : 0, "acknowledgementState": acknowledged ? 1 : 0, "regionCode": "US",
        ]
        if let order { body["orderId"] = order }
        if quantity > 1 { body["quantity"] = quantity }
        if let refundable { body["refundableQuantity"] = refundable }
        if test { body["purchaseType"] = 0 }
        return GooglePlayWire.json(body)
    }

    /// One voided purchases entry as the API writes it.
    static func voidedEntry(
        _ token: String, _ orderID: String, bought: Int64, voided: Int64, source: Int = 1, reason: Int = 0,
        quantity: Int? = nil
    ) -> [String: Any] {
        var entry: [String: Any] = [
            "kind": "androidpublisher#voidedPurchase", "purchaseToken": token, "orderId": orderID,
            "purchaseTimeMillis": String(bought), "voidedTimeMillis": String(voided), "voidedSource": source,
            "voidedReason": reason,
        ]
        entry["voidedQuantity"] = quantity
        return entry
    }

    static func voidedNotification(_ token: String, _ orderID: String, type: Int, refund: Int, at time: Int64)
        -> String
    {
        GooglePlayWire.notification(
            [
                "voidedPurchaseNotification": [
                    "purchaseToken": token, "orderId": orderID, "productType": type, "refundType": refund,
                ] as [String: Any]
            ], at: time)
    }

    static func oneTimeNotification(_ type: Int, _ token: String, _ sku: String, at time: Int64) -> String {
        GooglePlayWire.notification(
            [
                "oneTimeProductNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token, "sku": sku,
                ] as [String: Any]
            ], at: time)
    }

    /// Acknowledges the subscription `token` of `productID` through the API.
    static func acknowledge(_ wire: GooglePlayWire, _ productID: String, _ token: String) async throws -> Int {
        try await wire.call("POST", GooglePlayWire.purchases("/subscriptions/\(productID)/tokens/\(token):acknowledge"))
            .0
    }

    /// A fresh store in which a subscription to `productID` (with `addOns`, for `account`) is
    /// bought at the start and acknowledged through the API: the wire, the purchase token, the
    /// acknowledgement's HTTP status and the id of the purchase's initial order.
    private static func acknowledgedPurchase(
        _ productID: String = "pro_sub", addOns: [String] = [], account: String? = nil
    ) async throws -> (wire: GooglePlayWire, token: String, acknowledged: Int, base: String) {
        let wire = try GooglePlayWire()
        let token = try wire.store.buy(productID: productID, addOns: addOns, obfuscatedAccountID: account)
        let acknowledged = try await acknowledge(wire, productID, token)
        let base = try #require(try wire.store.orders(of: token).first?.id)
        return (wire, token, acknowledged, base)
    }

    /// Moves `wire`'s clock on to `time` and takes the pushes sent until then, unread.
    private static func skipPushes(_ wire: GooglePlayWire, until time: Int64) async throws {
        wire.store.advance(by: time - wire.store.clock.now)
        _ = try await wire.pushes()
    }

    // MARK: 1. Line items

    @Test(
        "add-ons: one token, one line item per product on one period and one order; an add-on whose renewal is off leaves at the renewal; the last one off cancels"
    )
    func addOns() async throws {
        let (wire, token, acknowledged, base) = try await Self.acknowledgedPurchase(addOns: ["extra_storage"])
        #expect(acknowledged == 200)
        #expect(base == "GPA.3301-4417-0193-13301")
        /// The subscription with its add-on, both on `base` until February, the add-on renewing
        /// as `addOnRenews`.
        func withAddOn(renewing addOnRenews: Bool) -> String {
            Self.subscription(
                Self.active, start: Self.start,
                items: [
                    Self.item("pro_sub", expiry: Self.february, renewing: true, order: base),
                    Self.item("extra_storage", expiry: Self.february, renewing: addOnRenews, order: base),
                ], latestOrder: base, acknowledged: true)
        }
        #expect(try await wire.subscription(token) == withAddOn(renewing: true))

        try wire.store.cancelAddOn(token, productID: "extra_storage")
        #expect(try await wire.subscription(token) == withAddOn(renewing: false))
        #expect(try await wire.pushes().map(\.kind) == ["4"])

        wire.store.advance(by: Self.february - Self.start)
        #expect(
            try await wire.subscription(token)
                == Self.renewingPro(until: Self.march, order: "\(base)..0"))
        let orders = try wire.store.orders(of: token)
        #expect(orders.map(\.id) == [base, "\(base)..0"])
        #expect(orders.map(\.productIDs) == [["pro_sub", "extra_storage"], ["pro_sub"]])
        #expect(
            orders.map(\.start) == [Self.start, Self.february] && orders.map(\.end) == [Self.february, Self.march])
        let renewed = try await wire.pushes()
        #expect(renewed.map(\.kind) == ["2"])
        #expect(renewed.first?.json == GooglePlayWire.subscriptionNotification(2, token, "pro_sub", at: Self.february))

        // The last renewing item's renewal off: the subscription is CANCELED.
        let other = try wire.store.buy(productID: "pro_sub", addOns: ["extra_storage"])
        let otherBase = try #require(try wire.store.orders(of: other).first?.id)
        try wire.store.cancelAddOn(other, productID: "extra_storage")
        try wire.store.cancelAddOn(other, productID: "pro_sub")
        #expect(
            try await wire.subscription(other)
                == Self.subscription(
                    "SUBSCRIPTION_STATE_CANCELED", start: Self.february,
                    items: [
                        Self.item("pro_sub", expiry: Self.march, renewing: false, order: otherBase),
                        Self.item("extra_storage", expiry: Self.march, renewing: false, order: otherBase),
                    ], latestOrder: otherBase, acknowledged: false,
                    extra: [
                        "canceledStateContext": [
                            "userInitiatedCancellation": ["cancelTime": GooglePlayWire.rfc3339(Self.february)]
                        ]
                    ]))
        #expect(try await wire.pushes().map(\.kind) == ["4", "3"])
        let missing = #expect(throws: SimError.self) { try wire.store.cancelAddOn(token, productID: "extra_storage") }
        #expect(missing?.kind == .notFound)
        let periods = #expect(throws: SimError.self) {
            try wire.store.buy(productID: "pro_sub", addOns: ["pro_yearly"])
        }
        #expect(periods?.kind == .badRequest)
    }

    // MARK: 2. Orders

    @Test(
        "every renewal is a new order <initial>..N in latestSuccessfulOrderId; in grace latestOrderId names the order being retried, which the recovery charges"
    )
    func renewalOrders() async throws {
        let (wire, token, acknowledged, base) = try await Self.acknowledgedPurchase()
        #expect(acknowledged == 200)
        wire.store.advance(by: Self.april - Self.start)
        #expect(
            try await wire.subscription(token)
                == Self.renewingPro(until: Self.may, order: "\(base)..2"))
        let orders = try wire.store.orders(of: token)
        #expect(orders.map(\.id) == [base, "\(base)..0", "\(base)..1", "\(base)..2"])
        #expect(orders.map(\.start) == [Self.start, Self.february, Self.march, Self.april])
        #expect(orders.map(\.chargedAt) == [Self.start, Self.february, Self.march, Self.april])
        #expect(orders.map(\.end) == [Self.february, Self.march, Self.april, Self.may])
        #expect(orders.allSatisfy { $0.quantity == 1 && $0.purchaseToken == token && $0.voidedAt == nil })
        let pushes = try await wire.pushes()
        #expect(pushes.map(\.kind) == ["4", "2", "2", "2"])
        #expect(pushes.map(\.eventTimeMillis) == [Self.start, Self.february, Self.march, Self.april])

        try wire.store.failPayment(token)
        wire.store.advance(by: Self.may + Self.day - Self.april)
        #expect(
            try await wire.subscription(token)
                == Self.subscription(
                    "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", start: Self.start,
                    items: [Self.item("pro_sub", expiry: Self.may8, renewing: true, order: "\(base)..2")],
                    latestOrder: "\(base)..3", acknowledged: true))
        try wire.store.recover(token)
        #expect(
            try await wire.subscription(token)
                == Self.renewingPro(until: Self.june, order: "\(base)..3"))
        #expect(try wire.store.orders(of: token).last?.chargedAt == Self.may + Self.day)
        #expect(try await wire.pushes().map(\.kind) == ["6", "1"])
    }

    // MARK: 3. Plan changes

    @Test(
        "an immediate change: a new ACTIVE token with a new initial order linked to the old, which reads EXPIRED by replacement at the change; RTDN 4 then 13"
    )
    func immediateChange() async throws {
        let (wire, old, acknowledged, base) = try await Self.acknowledgedPurchase(account: "acct-1")
        #expect(acknowledged == 200)
        try await Self.skipPushes(wire, until: Self.january11)
        let next = try wire.store.changeProduct(old, to: "premium_sub", mode: .immediate)
        let nextBase = try #require(try wire.store.orders(of: next).first?.id)
        #expect(nextBase != base && !nextBase.contains(".."))
        let account: [String: Any] = ["externalAccountIdentifiers": ["obfuscatedExternalAccountId": "acct-1"]]
        #expect(
            try await wire.subscription(next)
                == Self.linkedChange(
                    "premium_sub", from: old, start: Self.january11, expiry: Self.february11, order: nextBase,
                    extra: account))
        #expect(
            try await wire.subscription(old)
                == Self.replacedByChange("pro_sub", at: Self.january11, base: base, extra: account))
        let pushes = try await wire.pushes()
        #expect(pushes.map(\.kind) == ["4", "13"] && pushes.map(\.token) == [next, old])
        #expect(
            pushes.map(\.json) == [
                GooglePlayWire.subscriptionNotification(4, next, "premium_sub", at: Self.january11),
                GooglePlayWire.subscriptionNotification(13, old, "pro_sub", at: Self.january11),
            ])
        // The older entry point still means the same.
        let third = try #require(try wire.store.changeProduct(next, to: "pro_sub", immediately: true))
        #expect(try await wire.subscriptionObject(third)["linkedPurchaseToken"] as? String == next)
    }

    @Test(
        "a pending change: the new token reads PENDING with no order and no start, the old one exactly as it was; the payment makes it the immediate change then"
    )
    func pendingChangeCompleted() async throws {
        let (wire, old, acknowledged, base) = try await Self.acknowledgedPurchase()
        #expect(acknowledged == 200)
        try await Self.skipPushes(wire, until: Self.january11)
        let before = try await wire.subscription(old)
        let next = try wire.store.changeProduct(old, to: "premium_sub", mode: .pending)
        #expect(
            try await wire.subscription(next)
                == Self.linkedChange(
                    "premium_sub", from: old, state: "SUBSCRIPTION_STATE_PENDING", start: nil, expiry: nil, order: nil))
        #expect(try await wire.subscription(old) == before)
        #expect(try wire.store.orders(of: next).isEmpty)
        #expect(try await wire.pushes().isEmpty)
        #expect(try await Self.acknowledge(wire, "premium_sub", next) == 409)

        wire.store.advance(by: 2 * Self.day)
        let paidAt = Self.january11 + 2 * Self.day
        try wire.store.completePending(next)
        let nextBase = try #require(try wire.store.orders(of: next).first?.id)
        #expect(
            try await wire.subscription(next)
                == Self.linkedChange(
                    "premium_sub", from: old, start: paidAt, expiry: Self.february13, order: nextBase))
        #expect(
            try await wire.subscription(old)
                == Self.replacedByChange("pro_sub", at: paidAt, base: base))
        let pushes = try await wire.pushes()
        #expect(pushes.map(\.kind) == ["4", "13"] && pushes.map(\.token) == [next, old])
        #expect(pushes.map(\.eventTimeMillis) == [paidAt, paidAt])
        let again = #expect(throws: SimError.self) { try wire.store.completePending(next) }
        #expect(again?.kind == .conflict)
    }

    @Test(
        "a pending change whose payment never comes: PENDING_PURCHASE_CANCELED with RTDN 20, and the old token untouched and renewing"
    )
    func pendingChangeCancelled() async throws {
        let (wire, old, acknowledged, _) = try await Self.acknowledgedPurchase()
        #expect(acknowledged == 200)
        _ = try await wire.pushes()
        let before = try await wire.subscription(old)
        let next = try wire.store.changeProduct(old, to: "premium_sub", mode: .pending)
        try wire.store.cancelPending(next)
        #expect(
            try await wire.subscription(next)
                == Self.linkedChange(
                    "premium_sub", from: old, state: "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED", start: nil,
                    expiry: nil, order: nil))
        #expect(try await wire.subscription(old) == before)
        let pushes = try await wire.pushes()
        #expect(
            pushes.map(\.json) == [GooglePlayWire.subscriptionNotification(20, next, "premium_sub", at: Self.start)])
        wire.store.advance(by: Self.february - Self.start)
        #expect(try await wire.pushes().map(\.kind) == ["2"])
        #expect(try await wire.subscriptionObject(old)["subscriptionState"] as? String == Self.active)
    }

    @Test(
        "a deferred change: the new token is issued at the change with no order, showing the old plan and naming the new one; the old one stops renewing and runs to its end, then expires replaced and the new one is charged (RTDN 4)"
    )
    func deferredChange() async throws {
        let (wire, old, acknowledged, base) = try await Self.acknowledgedPurchase("premium_sub")
        #expect(acknowledged == 200)
        try await Self.skipPushes(wire, until: Self.january11)
        let next = try wire.store.changeProduct(old, to: "pro_sub", mode: .deferred)
        // Until the old period ends the new token shows the plan in force, naming the one to come.
        var inForce = Self.item("premium_sub", expiry: Self.february, renewing: true, order: nil)
        inForce["deferredItemReplacement"] = ["productId": "pro_sub"]
        #expect(
            try await wire.subscription(next)
                == Self.subscription(
                    Self.active, start: Self.january11, items: [inForce], latestOrder: nil, acknowledged: false,
                    extra: ["linkedPurchaseToken": old]))
        #expect(
            try await wire.subscription(old)
                == Self.subscription(
                    Self.active, start: Self.start,
                    item: Self.item("premium_sub", expiry: Self.february, renewing: false, order: base),
                    acknowledged: true))
        #expect(try await wire.pushes().isEmpty)
        let busy = #expect(throws: SimError.self) { try wire.store.cancel(old) }
        #expect(busy?.kind == .conflict)

        wire.store.advance(by: Self.february - 1 - Self.january11)
        #expect(try await wire.pushes().isEmpty)
        #expect(try await wire.subscription(next).contains("latestSuccessfulOrderId") == false)
        wire.store.advance(by: 1)
        let nextBase = try #require(try wire.store.orders(of: next).first?.id)
        #expect(
            try await wire.subscription(next)
                == Self.linkedChange(
                    "pro_sub", from: old, start: Self.january11, expiry: Self.march, order: nextBase))
        #expect(
            try await wire.subscription(old)
                == Self.replacedByChange("premium_sub", at: Self.february, base: base))
        let pushes = try await wire.pushes()
        #expect(pushes.map(\.kind) == ["4", "13"] && pushes.map(\.token) == [next, old])
        #expect(pushes.map(\.eventTimeMillis) == [Self.february, Self.february])
        #expect(try wire.store.orders(of: old).map(\.id) == [base])
        // The older entry point maps `immediately: false` to this mode and names no token.
        #expect(try wire.store.changeProduct(next, to: "premium_sub", immediately: false) == nil)
    }

    // MARK: 4 and 6. Voids, REVOKED then EXPIRED

    @Test(
        "a void of a past renewal leaves the current period alone; a void of the current order with revoke sends 12, 13 and the void, EXPIRED from now"
    )
    func voidsOfAnyOrder() async throws {
        let (wire, token, acknowledged, base) = try await Self.acknowledgedPurchase()
        #expect(acknowledged == 200)
        try await Self.skipPushes(wire, until: Self.march3)
        let current = try await wire.subscription(token)
        try wire.store.void(orderID: "\(base)..0", revoke: true)
        #expect(try await wire.subscription(token) == current)
        #expect(try wire.store.orders(of: token)[1].voidedAt == Self.march3)
        var pushes = try await wire.pushes()
        #expect(
            pushes.map(\.json) == [Self.voidedNotification(token, "\(base)..0", type: 1, refund: 1, at: Self.march3)])
        let (listed, page) = try await wire.voided("type=1&startTime=\(Self.february)")
        #expect(listed == 200)
        #expect(
            page
                == GooglePlayWire.json([
                    "voidedPurchases": [
                        Self.voidedEntry(token, "\(base)..0", bought: Self.february, voided: Self.march3)
                    ]
                ]))

        wire.store.advance(by: Self.day)
        let revokedAt = Self.march3 + Self.day
        try wire.store.void(orderID: "\(base)..1", revoke: true)
        #expect(
            try await wire.subscription(token)
                == Self.subscription(
                    Self.expired, start: Self.start,
                    item: Self.item("pro_sub", expiry: revokedAt, renewing: false, order: "\(base)..1"),
                    acknowledged: true, extra: Self.revokedBySystem))
        pushes = try await wire.pushes()
        #expect(
            pushes.map(\.json) == [
                GooglePlayWire.subscriptionNotification(12, token, "pro_sub", at: revokedAt),
                GooglePlayWire.subscriptionNotification(13, token, "pro_sub", at: revokedAt),
                Self.voidedNotification(token, "\(base)..1", type: 1, refund: 1, at: revokedAt),
            ])
        wire.store.advance(by: 60 * Self.day)
        #expect(try await wire.pushes().isEmpty)
        let twice = #expect(throws: SimError.self) { try wire.store.void(orderID: "\(base)..1", revoke: true) }
        #expect(twice?.kind == .conflict)
        let unknown = #expect(throws: SimError.self) {
            try wire.store.void(orderID: "GPA.0000-0000-0000-00000", revoke: true)
        }
        #expect(unknown?.kind == .notFound)
        let partial = #expect(throws: SimError.self) {
            try wire.store.void(orderID: base, refundType: 2, quantity: 1, revoke: false)
        }
        #expect(partial?.kind == .badRequest)
    }

    @Test(
        "a refund revokes with RTDN 12 then 13, both reading the same EXPIRED state; an unacknowledged purchase is refunded as unacknowledged (voidedReason 8)"
    )
    func revokedThenExpired() async throws {
        let (wire, refunded, acknowledged, refundedOrder) = try await Self.acknowledgedPurchase()
        #expect(acknowledged == 200)
        let forgotten = try wire.store.buy(productID: "pro_sub")
        _ = try await wire.pushes()
        wire.store.advance(by: Self.day)
        try wire.store.refund(refunded)
        let pushes = try await wire.pushes()
        #expect(pushes.map(\.kind) == ["12", "13", "voided"] && Set(pushes.map(\.eventTimeMillis)).count == 1)
        let afterRevoked = try await wire.subscription(refunded)
        let afterExpired = try await wire.subscription(refunded)
        #expect(
            afterRevoked == afterExpired
                && afterExpired
                    == Self.subscription(
                        Self.expired, start: Self.start,
                        item: Self.item(
                            "pro_sub", expiry: Self.start + Self.day, renewing: false, order: refundedOrder),
                        acknowledged: true, extra: Self.revokedBySystem)
        )
        let again = #expect(throws: SimError.self) { try wire.store.refund(refunded) }
        #expect(again?.kind == .conflict)

        wire.store.advance(by: 2 * Self.day)
        let unacknowledged = try await wire.pushes()
        #expect(
            unacknowledged.map(\.kind) == ["12", "13", "voided"] && unacknowledged.allSatisfy { $0.token == forgotten })
        #expect(unacknowledged.first?.eventTimeMillis == Self.start + 3 * Self.day)
        let forgottenOrder = try #require(try wire.store.orders(of: forgotten).first?.id)
        let (_, page) = try await wire.voided("type=1&startTime=\(Self.start)")
        #expect(
            page
                == GooglePlayWire.json([
                    "voidedPurchases": [
                        Self.voidedEntry(
                            refunded, refundedOrder, bought: Self.start, voided: Self.start + Self.day, source: 2),
                        Self.voidedEntry(
                            forgotten, forgottenOrder, bought: Self.start, voided: Self.start + 3 * Self.day,
                            source: 2, reason: 8),
                    ]
                ]))
    }

    // MARK: 5. One-time products

    @Test(
        "one-time products: products.get answers, acknowledge and consume, RTDN 1 and 2, pending purchases, and the refund of an unacknowledged one"
    )
    func oneTimeProducts() async throws {
        let wire = try GooglePlayWire()
        let coins = try wire.store.buyOneTime(productID: "coins_100", quantity: 3, obfuscatedAccountID: "acct-1")
        let order = try #require(try wire.store.orders(of: coins).first)
        #expect(order.quantity == 3 && order.end == nil && order.productIDs == ["coins_100"])
        var body = try await wire.product("coins_100", coins)
        #expect(
            body
                == GooglePlayWire.json([
                    "kind": "androidpublisher#productPurchase", "purchaseTimeMillis": String(Self.start),
                    "purchaseState": 0, "consumptionState": 0, "acknowledgementState": 0, "regionCode": "US",
                    "orderId": order.id, "quantity": 3, "refundableQuantity": 3,
                    "obfuscatedExternalAccountId": "acct-1",
                ]))
        let path = GooglePlayWire.purchases("/products/coins_100/tokens/\(coins)")
        #expect(try await wire.call("POST", "\(path):consume").0 == 200)
        body = try await wire.product("coins_100", coins)
        #expect(body.contains("\"consumptionState\":1") && body.contains("\"acknowledgementState\":0"))
        #expect(try await wire.call("GET", GooglePlayWire.purchases("/products/lifetime/tokens/\(coins)")).0 == 400)
        #expect(try await wire.call("GET", GooglePlayWire.purchases("/subscriptionsv2/tokens/\(coins)")).0 == 404)

        let lifetime = try wire.store.buyOneTime(productID: "lifetime")
        let lifetimePath = GooglePlayWire.purchases("/products/lifetime/tokens/\(lifetime)")
        #expect(try await wire.call("POST", "\(lifetimePath):acknowledge").0 == 200)
        let lifetimeOrder = try #require(try wire.store.orders(of: lifetime).first?.id)
        #expect(
            try await wire.product("lifetime", lifetime)
                == Self.productPurchase(state: 0, bought: Self.start, order: lifetimeOrder, acknowledged: true))

        let pending = try wire.store.buyOneTime(productID: "lifetime", pending: true)
        #expect(
            try await wire.product("lifetime", pending)
                == Self.productPurchase(state: 2, bought: Self.start, order: nil))
        #expect(try wire.store.orders(of: pending).isEmpty)
        #expect(
            try await wire.call("POST", GooglePlayWire.purchases("/products/lifetime/tokens/\(pending):acknowledge")).0
                == 409)
        try wire.store.cancelPending(pending)
        #expect(
            try await wire.product("lifetime", pending)
                == Self.productPurchase(state: 1, bought: Self.start, order: nil))
        let paidLater = try wire.store.buyOneTime(productID: "lifetime", pending: true)
        wire.store.advance(by: Self.day)
        try wire.store.completePending(paidLater)
        let paidOrder = try #require(try wire.store.orders(of: paidLater).first)
        #expect(paidOrder.chargedAt == Self.start + Self.day)
        #expect(
            try await wire.product("lifetime", paidLater)
                == Self.productPurchase(state: 0, bought: Self.start, order: paidOrder.id))
        let pushes = try await wire.pushes()
        #expect(
            pushes.map(\.json) == [
                Self.oneTimeNotification(1, coins, "coins_100", at: Self.start),
                Self.oneTimeNotification(1, lifetime, "lifetime", at: Self.start),
                Self.oneTimeNotification(1, pending, "lifetime", at: Self.start),
                Self.oneTimeNotification(2, pending, "lifetime", at: Self.start),
                Self.oneTimeNotification(1, paidLater, "lifetime", at: Self.start),
                Self.oneTimeNotification(1, paidLater, "lifetime", at: Self.start + Self.day),
            ])

        // Neither acknowledged nor consumed within three days of the payment: refunded, cancelled.
        wire.store.advance(by: 3 * Self.day)
        #expect(
            try await wire.product("lifetime", paidLater)
                == Self.productPurchase(state: 1, bought: Self.start, order: paidOrder.id))
        #expect(
            try await wire.pushes().map(\.json) == [
                Self.voidedNotification(paidLater, paidOrder.id, type: 2, refund: 1, at: Self.start + 4 * Self.day)
            ])
        let unknown = #expect(throws: SimError.self) { try wire.store.buyOneTime(productID: "pro_sub") }
        #expect(unknown?.kind == .notFound)
    }

    @Test(
        "a quantity-based partial refund voids units and the purchase stays owned while units remain; it is listed, with voidedQuantity, only when asked for"
    )
    func partialRefunds() async throws {
        let wire = try GooglePlayWire()
        let coins = try wire.store.buyOneTime(productID: "coins_100", quantity: 3)
        let path = GooglePlayWire.purchases("/products/coins_100/tokens/\(coins)")
        #expect(try await wire.call("POST", "\(path):acknowledge").0 == 200)
        let order = try #require(try wire.store.orders(of: coins).first?.id)
        _ = try await wire.pushes()
        wire.store.advance(by: Self.day)
        try wire.store.void(orderID: order, refundType: 2, quantity: 1, revoke: true)
        #expect(
            try await wire.product("coins_100", coins)
                == Self.productPurchase(
                    state: 0, bought: Self.start, order: order, quantity: 3, refundable: 2, acknowledged: true))
        #expect(try wire.store.orders(of: coins).first?.voidedQuantity == 1)
        #expect(
            try await wire.pushes().map(\.json) == [
                Self.voidedNotification(coins, order, type: 2, refund: 2, at: Self.start + Self.day)
            ])
        let entry = Self.voidedEntry(coins, order, bought: Self.start, voided: Self.start + Self.day, quantity: 1)
        #expect(
            try await wire.voided("startTime=\(Self.start)&includeQuantityBasedPartialRefund=true").1
                == GooglePlayWire.json(["voidedPurchases": [entry]]))
        #expect(try await wire.voided("startTime=\(Self.start)").1 == "{}")
        let tooMany = #expect(throws: SimError.self) {
            try wire.store.void(orderID: order, refundType: 2, quantity: 3, revoke: true)
        }
        #expect(tooMany?.kind == .badRequest)

        try wire.store.void(orderID: order, refundType: 2, quantity: 2, revoke: true)
        #expect(
            try await wire.product("coins_100", coins)
                == Self.productPurchase(
                    state: 1, bought: Self.start, order: order, quantity: 3, refundable: 0, acknowledged: true))
        let single = try wire.store.buyOneTime(productID: "lifetime")
        let singleOrder = try #require(try wire.store.orders(of: single).first?.id)
        let one = #expect(throws: SimError.self) {
            try wire.store.void(orderID: singleOrder, refundType: 2, quantity: 1, revoke: true)
        }
        #expect(one?.kind == .badRequest)
        // A full refund without revoke: listed and notified, still owned.
        try wire.store.void(orderID: singleOrder, revoke: false)
        #expect(try await wire.product("lifetime", single).contains("\"purchaseState\":0"))
        #expect(try await wire.voided("startTime=\(Self.start)").1.contains(singleOrder))
    }

    // MARK: 7. Test purchases

    @Test("test purchases: testPurchase {} in subscriptionsv2, purchaseType 0 in products.get, refunded within minutes")
    func testPurchases() async throws {
        var configuration = GooglePlayWire.configuration()
        configuration.testPurchases = true
        let wire = try GooglePlayWire(configuration)
        let token = try wire.store.buy(productID: "pro_sub")
        let base = try #require(try wire.store.orders(of: token).first?.id)
        #expect(
            try await wire.subscription(token)
                == Self.subscription(
                    Self.active, start: Self.start,
                    item: Self.item("pro_sub", expiry: Self.february, renewing: true, order: base), acknowledged: false,
                    extra: ["testPurchase": [String: Any]()]))
        let real = try wire.store.buy(productID: "pro_sub", test: false)
        #expect(try await wire.subscriptionObject(real)["testPurchase"] == nil)
        let coins = try wire.store.buyOneTime(productID: "coins_100")
        let order = try #require(try wire.store.orders(of: coins).first?.id)
        #expect(
            try await wire.product("coins_100", coins)
                == Self.productPurchase(state: 0, bought: Self.start, order: order, test: true))
        let realCoins = try wire.store.buyOneTime(productID: "coins_100", test: false)
        #expect(try await wire.product("coins_100", realCoins).contains("purchaseType") == false)
        _ = try await wire.pushes()
        // Five minutes unacknowledged: the test purchases are refunded, the real ones are not.
        wire.store.advance(by: 5 * 60_000)
        let pushes = try await wire.pushes()
        #expect(pushes.filter { $0.token == token }.map(\.kind) == ["12", "13", "voided"])
        #expect(pushes.filter { $0.token != token }.map(\.token) == [coins])
        #expect(pushes.map(\.eventTimeMillis) == Array(repeating: Self.start + 5 * 60_000, count: 4))
        #expect(try await wire.subscriptionObject(real)["subscriptionState"] as? String == Self.active)
    }

    // MARK: 8. Prepaid plans

    @Test(
        "a prepaid plan: prepaidPlan with allowExtendAfterTime and no autoRenewingPlan; a top-up is a new order one period on; it expires with RTDN 13"
    )
    func prepaidPlans() async throws {
        let (wire, token, acknowledged, base) = try await Self.acknowledgedPurchase("pass_sub")
        #expect(acknowledged == 200)
        #expect(
            try await wire.subscription(token)
                == Self.subscription(
                    Self.active, start: Self.start,
                    items: [
                        Self.item(
                            "pass_sub", plan: "prepaid-month", expiry: Self.february, renewing: nil, order: base,
                            allowExtendAfter: Self.start)
                    ], latestOrder: base, acknowledged: true))
        let cancel = #expect(throws: SimError.self) { try wire.store.cancel(token) }
        #expect(cancel?.kind == .conflict)

        wire.store.advance(by: Self.january20 - Self.start)
        try wire.store.topUp(token)
        /// The pass in `state` after the top-up: paid on its second order until March.
        func toppedUp(_ state: String) -> String {
            Self.subscription(
                state, start: Self.start,
                item: Self.item(
                    "pass_sub", plan: "prepaid-month", expiry: Self.march, renewing: nil, order: "\(base)..0"),
                acknowledged: true)
        }
        #expect(try await wire.subscription(token) == toppedUp(Self.active))
        let orders = try wire.store.orders(of: token)
        #expect(orders.map(\.id) == [base, "\(base)..0"] && orders.map(\.chargedAt) == [Self.start, Self.january20])
        #expect(
            orders.map(\.start) == [Self.start, Self.february] && orders.map(\.end) == [Self.february, Self.march])
        let twice = #expect(throws: SimError.self) { try wire.store.topUp(token) }
        #expect(twice?.kind == .conflict)
        #expect(try await wire.pushes().map(\.kind) == ["4", "2"])

        wire.store.advance(by: Self.february + Self.day - Self.january20)
        #expect(try await wire.subscription(token).contains(#""allowExtendAfterTime":"2026-02-01T00:00:00.000Z""#))
        wire.store.advance(by: Self.march - Self.february - Self.day)
        #expect(try await wire.subscription(token) == toppedUp(Self.expired))
        #expect(
            try await wire.pushes().map(\.json) == [
                GooglePlayWire.subscriptionNotification(13, token, "pass_sub", at: Self.march)
            ])
    }

    // MARK: 9. The voided purchases list

    @Test(
        "voidedpurchases.list refuses a startTime older than 30 days; type=1 adds subscriptions; endTime, maxResults and page tokens"
    )
    func voidedPurchasesList() async throws {
        let wire = try GooglePlayWire()
        let subscription = try wire.store.buy(productID: "pro_sub")
        let coins = try wire.store.buyOneTime(productID: "coins_100")
        let subscriptionOrder = try #require(try wire.store.orders(of: subscription).first?.id)
        let coinsOrder = try #require(try wire.store.orders(of: coins).first?.id)
        wire.store.advance(by: Self.day)
        try wire.store.void(orderID: subscriptionOrder, revoke: true)
        wire.store.advance(by: Self.day)
        try wire.store.void(orderID: coinsOrder, revoke: true)
        wire.store.advance(by: 29 * Self.day)
        let now = wire.store.clock.now
        let subscriptionEntry = Self.voidedEntry(
            subscription, subscriptionOrder, bought: Self.start, voided: Self.start + Self.day)
        let coinsEntry = Self.voidedEntry(coins, coinsOrder, bought: Self.start, voided: Self.start + 2 * Self.day)

        let (tooOld, error) = try await wire.voided("startTime=\(now - 30 * Self.day - 1)")
        #expect(tooOld == 400)
        #expect(
            error
                == #"{"error":{"code":400,"message":"startTime is too far in the past: at most 30 days ago is allowed.","status":"INVALID_ARGUMENT"}}"#
        )
        let start = now - 30 * Self.day
        #expect(try await wire.voided("startTime=\(start)").1 == GooglePlayWire.json(["voidedPurchases": [coinsEntry]]))
        #expect(try await wire.voided("").1 == GooglePlayWire.json(["voidedPurchases": [coinsEntry]]))
        #expect(
            try await wire.voided("startTime=\(start)&type=1").1
                == GooglePlayWire.json(["voidedPurchases": [subscriptionEntry, coinsEntry]]))
        #expect(
            try await wire.voided("startTime=\(start)&type=1&endTime=\(Self.start + 2 * Self.day - 1)").1
                == GooglePlayWire.json(["voidedPurchases": [subscriptionEntry]]))
        let first = try await wire.voided("startTime=\(start)&type=1&maxResults=1").1
        #expect(
            first
                == GooglePlayWire.json([
                    "voidedPurchases": [subscriptionEntry], "tokenPagination": ["nextPageToken": "1"],
                ]))
        #expect(
            try await wire.voided("startTime=\(start)&type=1&maxResults=1&token=1").1
                == GooglePlayWire.json(["voidedPurchases": [coinsEntry]]))
        #expect(try await wire.voided("type=1&token=9").0 == 400)
        #expect(try await wire.voided("startTime=\(now)&endTime=\(now - 1)").0 == 400)
    }

    // MARK: The control surface

    @Test(
        "the control surface buys with add-ons and one-time products, cancels an add-on, changes plans by mode, settles pending changes, voids orders, tops up and lists orders"
    )
    func controlSurface() async throws {
        let wire = try GooglePlayWire()
        let server = try wire.controlServer().server
        defer { server.stop() }
        func post(_ path: String, _ body: [String: Any]) async throws -> (Int, [String: Any]) {
            let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            let (status, answer) = try await httpPost(port: server.port, path: "/control/google/\(path)", body: text)
            return (status, (try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]) ?? [:])
        }

        let (bought, purchase) = try await post("buy", ["productId": "pro_sub", "addOns": ["extra_storage"]])
        let token = try #require(purchase["purchaseToken"] as? String)
        let base = try #require(purchase["orderId"] as? String)
        #expect(bought == 200)
        #expect(try wire.store.orders(of: token).first?.id == base)
        #expect(try await post("cancel-add-on", ["purchaseToken": token, "productId": "extra_storage"]).0 == 200)
        #expect(try await wire.subscription(token).contains(#"{"autoRenewingPlan":{},"expiryTime""#))
        #expect(try await post("buy", ["productId": "pro_sub", "addOns": "extra_storage"]).0 == 400)

        let (_, pending) = try await post(
            "change-product", ["purchaseToken": token, "productId": "premium_sub", "mode": "pending"])
        let pendingToken = try #require(pending["purchaseToken"] as? String)
        #expect(try await post("cancel-pending", ["purchaseToken": pendingToken]).0 == 200)
        #expect(
            try await wire.subscriptionObject(pendingToken)["subscriptionState"] as? String
                == "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED")
        let (_, completed) = try await post(
            "change-product", ["purchaseToken": token, "productId": "premium_sub", "mode": "pending"])
        let completedToken = try #require(completed["purchaseToken"] as? String)
        #expect(try await post("complete-pending", ["purchaseToken": completedToken]).0 == 200)
        #expect(try await wire.subscriptionObject(token)["subscriptionState"] as? String == Self.expired)
        let (_, deferred) = try await post(
            "change-product", ["purchaseToken": completedToken, "productId": "pro_sub", "mode": "deferred"])
        #expect(deferred["purchaseToken"] is String)
        #expect(
            try await post(
                "change-product", ["purchaseToken": completedToken, "productId": "pro_sub", "mode": "later"]
            ).0 == 400)
        let other = try wire.store.buy(productID: "pro_sub")
        let (_, legacy) = try await post(
            "change-product", ["purchaseToken": other, "productId": "premium_sub", "immediately": false])
        #expect(legacy["purchaseToken"] == nil)

        let (_, coins) = try await post("buy-one-time", ["productId": "coins_100", "quantity": 2])
        let coinsToken = try #require(coins["purchaseToken"] as? String)
        let coinsOrder = try #require(coins["orderId"] as? String)
        #expect(try await post("void", ["orderId": coinsOrder, "refundType": 2, "quantity": 1]).0 == 200)
        #expect(try wire.store.orders(of: coinsToken).first?.voidedQuantity == 1)
        #expect(try await post("void", ["orderId": coinsOrder, "refundType": 3]).0 == 400)
        let (_, pendingCoins) = try await post("buy-one-time", ["productId": "coins_100", "pending": true])
        #expect(pendingCoins["orderId"] == nil && pendingCoins["purchaseToken"] is String)

        let (_, pass) = try await post("buy", ["productId": "pass_sub"])
        let passToken = try #require(pass["purchaseToken"] as? String)
        #expect(try await post("top-up", ["purchaseToken": passToken]).0 == 200)
        let (_, listed) = try await post("orders", ["purchaseToken": passToken])
        let orders = try #require(listed["orders"] as? [[String: Any]])
        #expect(
            orders.map { $0["orderId"] as? String } == [
                pass["orderId"] as? String, "\(pass["orderId"] as? String ?? "")..0",
            ])
        #expect(orders.map { ($0["end"] as? NSNumber)?.int64Value } == [Self.february, Self.march])
        #expect(orders.map { ($0["productIds"] as? [String]) ?? [] } == [["pass_sub"], ["pass_sub"]])
    }
}
