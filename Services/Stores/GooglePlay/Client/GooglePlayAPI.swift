public import Foundation
public import HTTPClient

/// The Google Play Developer API calls the verifier makes (androidpublisher v3).
/// `GooglePlayDeveloperAPIClient` implements it over HTTPS; tests use other implementations.
public protocol GooglePlayAPI: Sendable {
    /// `GET …/applications/{packageName}/purchases/subscriptionsv2/tokens/{token}`.
    func subscription(packageName: String, token: String) async throws(GooglePlayAPIError) -> SubscriptionPurchaseV2
    /// `POST …/applications/{packageName}/purchases/subscriptions/{subscriptionId}/tokens/{token}:acknowledge`.
    func acknowledgeSubscription(packageName: String, subscriptionID: String, token: String)
        async throws(GooglePlayAPIError)
    /// `GET …/applications/{packageName}/purchases/products/{productId}/tokens/{token}`.
    func productPurchase(packageName: String, productID: String, token: String) async throws(GooglePlayAPIError)
        -> ProductPurchase
    /// `POST …/applications/{packageName}/purchases/products/{productId}/tokens/{token}:acknowledge`.
    func acknowledgeProduct(packageName: String, productID: String, token: String) async throws(GooglePlayAPIError)
    /// `POST …/applications/{packageName}/purchases/products/{productId}/tokens/{token}:consume`.
    func consumeProduct(packageName: String, productID: String, token: String) async throws(GooglePlayAPIError)
    /// `GET …/applications/{packageName}/purchases/voidedpurchases`, every page, for purchases
    /// voided in [`start`, `end`), subscriptions included (`type=1`).
    func voidedPurchases(packageName: String, start: Date, end: Date) async throws(GooglePlayAPIError)
        -> [VoidedPurchase]
    /// `POST …/purchases/subscriptionsv2/tokens/{token}:revoke` with `refund` as the
    /// `revocationContext`: access ends now and the refund is made.
    func revokeSubscription(packageName: String, token: String, refund: GoogleRevocationRefund)
        async throws(GooglePlayAPIError)
    /// `POST …/orders/{orderId}:refund`, with `revoke=true` to end access as well.
    func refundOrder(packageName: String, orderID: String, revoke: Bool) async throws(GooglePlayAPIError)
    /// `POST …/purchases/subscriptions/{subscriptionId}/tokens/{token}:defer` from
    /// `expectedExpiry` (which must be Play's current expiry) to `desiredExpiry`, epoch ms;
    /// returns the new expiry Play answers.
    func deferSubscription(
        packageName: String, subscriptionID: String, token: String, expectedExpiry: Int64, desiredExpiry: Int64
    ) async throws(GooglePlayAPIError) -> Int64
    /// `POST …/purchases/subscriptionsv2/tokens/{token}:cancel` with `cancellationType`
    /// `USER_REQUESTED_STOP_RENEWALS`: renewal stops, access stays to the period's end.
    func cancelSubscription(packageName: String, token: String) async throws(GooglePlayAPIError)
}

/// The refund a `purchases.subscriptionsv2.revoke` makes (its `revocationContext`).
public enum GoogleRevocationRefund: String, Sendable, Equatable {
    /// The latest charge of every item, in full.
    case full = "fullRefund"
    /// What is left of the paid period, pro rata.
    case prorated = "proratedRefund"
}

/// Why a Google Play Developer API call failed. Never contains a token, the key or the
/// access token.
public struct GooglePlayAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The codes both store API clients share (`StoreAPIErrorCode`); `gone` is Play's 410.
    public typealias Code = StoreAPIErrorCode

    public let code: Code
    /// The HTTP status, when there was an answer.
    public let httpStatus: Int?
    public let message: String
    /// Google's status name from the error body (`FAILED_PRECONDITION`, `INVALID_ARGUMENT`,
    /// `NOT_FOUND`, `RESOURCE_EXHAUSTED` …), when the answer had one.
    public var googleStatus: String?
    /// How long Google asked to wait (`Retry-After`), when it said.
    public var retryAfter: Duration?

    public init(_ code: Code, _ message: String, httpStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
    }

    /// Errors are equal by code, HTTP status and message; Google's status name and
    /// `Retry-After` are details of the same answer.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && lhs.httpStatus == rhs.httpStatus && lhs.message == rhs.message
    }

    /// Whether trying again later may succeed.
    public var isRetryable: Bool { code.isRetryable }

    public var description: String {
        "Google Play Developer API: \(code)" + (httpStatus.map { " (HTTP \($0))" } ?? "") + ": " + message
    }
}
