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

    public init(_ code: Code, _ message: String, httpStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
    }

    /// Whether trying again later may succeed.
    public var isRetryable: Bool { code.isRetryable }

    public var description: String {
        "Google Play Developer API: \(code)" + (httpStatus.map { " (HTTP \($0))" } ?? "") + ": " + message
    }
}
