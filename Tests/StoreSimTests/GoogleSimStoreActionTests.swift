import Foundation
import StoreSimKit
import Testing

/// The simulated Play's calls that change a purchase, at least as strict as Play: their paths
/// and bodies, Play's refusals (404 NOT_FOUND, 400 FAILED_PRECONDITION, 400 INVALID_ARGUMENT),
/// and the notifications each change sends.
@Suite("Store simulator: Google Play store actions")
struct GoogleSimStoreActionTests {
    static let day = GooglePlayWire.day

    /// A fresh store with an acknowledged `pro_sub` bought at the start, its pushes taken.
    static func bought() async throws -> (wire: GooglePlayWire, token: String, order: String) {
        let wire = try GooglePlayWire()
        let token = try wire.store.buy(productID: "pro_sub")
        #expect(
            try await wire.call("POST", GooglePlayWire.purchases("/subscriptions/pro_sub/tokens/\(token):acknowledge"))
                .0 == 200)
        _ = try await wire.pushes()
        return (wire, token, try #require(try wire.store.orders(of: token).first?.id))
    }

    static func v2(_ wire: GooglePlayWire, _ token: String, _ verb: String, _ body: String) async throws -> (
        Int, String
    ) {
        try await wire.call("POST", GooglePlayWire.purchases("/subscriptionsv2/tokens/\(token):\(verb)"), body: body)
    }

    static func refund(_ wire: GooglePlayWire, _ order: String, revoke: Bool?) async throws -> (Int, String) {
        let query = revoke.map { "?revoke=\($0)" } ?? ""
        return try await wire.call(
            "POST", "/androidpublisher/v3/applications/\(GooglePlayWire.package)/orders/\(order):refund\(query)",
            body: "")
    }

    static func deferral(_ wire: GooglePlayWire, _ token: String, from expected: Int64, to desired: Int64) async throws
        -> (Int, String)
    {
        try await wire.call(
            "POST", GooglePlayWire.purchases("/subscriptions/pro_sub/tokens/\(token):defer"),
            body:
                #"{"deferralInfo":{"expectedExpiryTimeMillis":"\#(expected)","desiredExpiryTimeMillis":"\#(desired)"}}"#
        )
    }

    static func refusal(_ status: Int, _ name: String, _ message: String) -> (Int, String) {
        (status, #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(name)"}}"#)
    }

    @Test(
        "subscriptionsv2.revoke ends the subscription now (REVOKED, EXPIRED, a voided order by the developer); again is refused"
    )
    func revoke() async throws {
        let (wire, token, order) = try await Self.bought()
        #expect(
            try await Self.v2(wire, token, "revoke", #"{"revocationContext":{}}"#)
                == Self.refusal(400, "INVALID_ARGUMENT", "revocationContext needs fullRefund or proratedRefund."))
        #expect(
            try await Self.v2(wire, "unknown", "revoke", #"{"revocationContext":{"fullRefund":{}}}"#)
                == Self.refusal(404, "NOT_FOUND", "The purchase token was not found."))
        #expect(
            try await Self.v2(wire, token, "revoke", #"{"revocationContext":{"proratedRefund":{}}}"#) == (200, "{}"))
        let purchase = try await wire.subscriptionObject(token)
        #expect(purchase["subscriptionState"] as? String == "SUBSCRIPTION_STATE_EXPIRED")
        #expect((purchase["canceledStateContext"] as? [String: Any])?.keys.first == "developerInitiatedCancellation")
        #expect(try await wire.pushes().map(\.kind) == ["12", "13", "voided"])
        let (status, list) = try await wire.voided("type=1")
        #expect(status == 200 && list.contains(#""orderId":"\#(order)""#) && list.contains(#""voidedSource":1"#))
        #expect(
            try await Self.v2(wire, token, "revoke", #"{"revocationContext":{"fullRefund":{}}}"#)
                == Self.refusal(400, "FAILED_PRECONDITION", "The subscription is not active and cannot be revoked."))
    }

    @Test(
        "orders.refund refunds one order: without revoke nothing is listed or sent; twice, unknown or older than 3 years is refused"
    )
    func refund() async throws {
        let (wire, token, first) = try await Self.bought()
        wire.store.advance(by: 32 * Self.day)
        let renewal = try #require(try wire.store.orders(of: token).last?.id)
        #expect(renewal == first + "..0")
        _ = try await wire.pushes()
        #expect(try await Self.refund(wire, renewal, revoke: nil) == (200, "{}"))
        #expect(try await wire.pushes().isEmpty)
        #expect(try await wire.subscriptionObject(token)["subscriptionState"] as? String == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(
            try await Self.refund(wire, renewal, revoke: true)
                == Self.refusal(400, "FAILED_PRECONDITION", "The order has already been refunded."))
        #expect(
            try await Self.refund(wire, "GPA.0000-0000-0000-00000", revoke: false)
                == Self.refusal(404, "NOT_FOUND", "No order was found for the given order ID."))
        #expect(try await Self.refund(wire, first, revoke: nil).0 == 200)
        #expect(try await wire.voided("type=1").1 == "{}")
        // An order of a cancelled subscription, three years and a day on.
        let (old, oldToken, oldOrder) = try await Self.bought()
        try old.store.cancel(oldToken)
        old.store.advance(by: (3 * 365 + 1) * Self.day)
        #expect(
            try await Self.refund(old, oldOrder, revoke: true)
                == Self.refusal(400, "FAILED_PRECONDITION", "Orders older than 3 years cannot be refunded."))
    }

    @Test("orders.refund with revoke ends a live subscription now and voids that order")
    func refundAndRevoke() async throws {
        let (wire, token, order) = try await Self.bought()
        #expect(try await Self.refund(wire, order, revoke: true) == (200, "{}"))
        #expect(try await wire.pushes().map(\.kind) == ["12", "13", "voided"])
        #expect(
            try await wire.subscriptionObject(token)["subscriptionState"] as? String == "SUBSCRIPTION_STATE_EXPIRED")
        #expect(try await wire.voided("type=1").1.contains(#""orderId":"\#(order)""#))
    }

    @Test(
        "subscriptions.defer moves the expiry from the current one by 1 day to 1 year (DEFERRED); a cancelled one is refused"
    )
    func deferral() async throws {
        let (wire, token, _) = try await Self.bought()
        let expiry = try #require(try wire.store.orders(of: token).last?.end)
        #expect(
            try await Self.deferral(wire, token, from: expiry - 1, to: expiry + 10 * Self.day)
                == Self.refusal(
                    400, "FAILED_PRECONDITION",
                    "The expected expiry time \(expiry - 1) does not match the current expiry time \(expiry)."))
        #expect(
            try await Self.deferral(wire, token, from: expiry, to: expiry + 366 * Self.day)
                == Self.refusal(
                    400, "INVALID_ARGUMENT",
                    "The desired expiry time must be 1 day to 1 year after the current expiry time."))
        #expect(try await wire.pushes().isEmpty)
        let moved = expiry + 10 * Self.day
        #expect(
            try await Self.deferral(wire, token, from: expiry, to: moved) == (
                200, #"{"newExpiryTimeMillis":"\#(moved)"}"#
            ))
        #expect(try await wire.pushes().map(\.kind) == ["9"])
        let item = try #require((try await wire.subscriptionObject(token)["lineItems"] as? [[String: Any]])?.first)
        #expect(item["expiryTime"] as? String == GooglePlayWire.rfc3339(moved))
        // The renewal comes at the new expiry, not the old one.
        wire.store.advance(by: moved - wire.store.clock.now - 1)
        #expect(try wire.store.orders(of: token).count == 1)
        wire.store.advance(by: 2)
        #expect(try wire.store.orders(of: token).count == 2)
        try wire.store.cancel(token)
        let now = try #require(try wire.store.orders(of: token).last?.end)
        #expect(
            try await Self.deferral(wire, token, from: now, to: now + Self.day)
                == Self.refusal(
                    400, "FAILED_PRECONDITION", "The subscription is not active and renewing; it cannot be deferred."))
    }

    @Test(
        "subscriptionsv2.cancel turns renewal off (CANCELED, RTDN 3) with the cancellation type asked; again is refused"
    )
    func cancel() async throws {
        let (wire, token, _) = try await Self.bought()
        #expect(
            try await Self.v2(wire, token, "cancel", #"{"cancellationContext":{}}"#)
                == Self.refusal(400, "INVALID_ARGUMENT", "cancellationContext.cancellationType is required."))
        #expect(
            try await Self.v2(
                wire, token, "cancel", #"{"cancellationContext":{"cancellationType":"USER_REQUESTED_STOP_RENEWALS"}}"#)
                == (200, "{}"))
        #expect(try await wire.pushes().map(\.kind) == ["3"])
        let purchase = try await wire.subscriptionObject(token)
        #expect(purchase["subscriptionState"] as? String == "SUBSCRIPTION_STATE_CANCELED")
        #expect((purchase["canceledStateContext"] as? [String: Any])?.keys.first == "userInitiatedCancellation")
        #expect(
            try await Self.v2(
                wire, token, "cancel",
                #"{"cancellationContext":{"cancellationType":"DEVELOPER_REQUESTED_STOP_PAYMENTS"}}"#)
                == Self.refusal(
                    400, "FAILED_PRECONDITION", "The subscription is not active and renewing; it cannot be cancelled."))
    }
}
