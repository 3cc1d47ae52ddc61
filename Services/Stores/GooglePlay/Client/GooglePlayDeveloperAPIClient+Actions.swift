import Foundation
import HTTPClient

/// The calls that change a purchase at Play: revoke, refund, defer, cancel. Each is sent once:
/// an answer that may succeed later (429 with its `Retry-After`, 5xx, a network failure) ends
/// the call, so that an operator decides whether to ask again and nothing is done twice.
extension GooglePlayDeveloperAPIClient {
    /// `purchases.subscriptionsv2.revoke` with `{"revocationContext":{"<refund>":{}}}`.
    public func revokeSubscription(packageName: String, token: String, refund: GoogleRevocationRefund)
        async throws(GooglePlayAPIError)
    {
        let call = HTTPCall(
            method: "POST",
            path: try Self.subscriptionV2Path(packageName, token) + ":revoke",
            body: Self.json(["revocationContext": [refund.rawValue: [String: String]()]]),
            summary: "purchases.subscriptionsv2.revoke for \(packageName)")
        _ = try await send(call, .revoke, retryingNotFound: false, once: true)
    }

    /// `orders.refund` with `revoke` as its query parameter and no body.
    public func refundOrder(packageName: String, orderID: String, revoke: Bool) async throws(GooglePlayAPIError) {
        let call = HTTPCall(
            method: "POST",
            path: try Self.applicationPath(packageName) + "/orders/"
                + (try Self.productSegment(orderID, what: "order id")) + ":refund",
            query: [("revoke", revoke ? "true" : "false")],
            summary: "orders.refund of \(orderID.printableASCII(limit: 64)) for \(packageName)")
        _ = try await send(call, .refund, retryingNotFound: false, once: true)
    }

    /// `purchases.subscriptions.defer` with `deferralInfo` (both times as int64 strings, as the
    /// API writes them); returns the answer's `newExpiryTimeMillis`.
    public func deferSubscription(
        packageName: String, subscriptionID: String, token: String, expectedExpiry: Int64, desiredExpiry: Int64
    ) async throws(GooglePlayAPIError) -> Int64 {
        let call = HTTPCall(
            method: "POST",
            path: try Self.applicationPath(packageName) + "/purchases/subscriptions/"
                + (try Self.productSegment(subscriptionID, what: "subscription id")) + "/tokens/"
                + (try Self.tokenSegment(token)) + ":defer",
            body: Self.json([
                "deferralInfo": [
                    "expectedExpiryTimeMillis": String(expectedExpiry),
                    "desiredExpiryTimeMillis": String(desiredExpiry),
                ]
            ]),
            summary:
                "purchases.subscriptions.defer of \(subscriptionID.printableASCII(limit: 100)) for \(packageName)")
        let body = try await send(call, .deferral, retryingNotFound: false, once: true)
        let answer = try Self.decode(DeferAnswer.self, body, call: call)
        guard let expiry = Int64(answer.newExpiryTimeMillis) else {
            throw GooglePlayAPIError(
                .invalidResponse, "the answer to \(call.summary) has no newExpiryTimeMillis", httpStatus: 200)
        }
        return expiry
    }

    /// `purchases.subscriptionsv2.cancel` with `cancellationType` `USER_REQUESTED_STOP_RENEWALS`
    /// (the subscriber may restore it before it ends).
    public func cancelSubscription(packageName: String, token: String) async throws(GooglePlayAPIError) {
        let call = HTTPCall(
            method: "POST",
            path: try Self.subscriptionV2Path(packageName, token) + ":cancel",
            body: Self.json(["cancellationContext": ["cancellationType": "USER_REQUESTED_STOP_RENEWALS"]]),
            summary: "purchases.subscriptionsv2.cancel for \(packageName)")
        _ = try await send(call, .cancel, retryingNotFound: false, once: true)
    }

    /// `…/purchases/subscriptionsv2/tokens/{token}`.
    static func subscriptionV2Path(_ packageName: String, _ token: String) throws(GooglePlayAPIError) -> String {
        try applicationPath(packageName) + "/purchases/subscriptionsv2/tokens/" + (try tokenSegment(token))
    }

    /// `object` as a JSON body, keys sorted.
    private static func json(_ object: [String: [String: any Sendable]]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// The answer of `purchases.subscriptions.defer`.
    struct DeferAnswer: Decodable {
        let newExpiryTimeMillis: String
    }
}
