public import Foundation

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
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Known: String, Sendable {
            case notFound, unauthorized, rateLimited, server, network, invalidRequest, invalidResponse, configuration,
                gone
        }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// 404 after the brief retries a brand-new token gets: not a purchase of this app.
        public static let notFound = Code(.notFound)
        /// 410: the purchase is too old to be queried (Google keeps about 60 days after expiry).
        public static let gone = Code(.gone)
        /// 401 after refreshing the access token once, 403 (the service account may not act for
        /// the app), or the token exchange refused.
        public static let unauthorized = Code(.unauthorized)
        /// 429 after every retry.
        public static let rateLimited = Code(.rateLimited)
        /// 5xx after every retry.
        public static let server = Code(.server)
        /// No answer: connection refused, timeout, TLS failure.
        public static let network = Code(.network)
        /// Another 4xx: Google refused the request itself.
        public static let invalidRequest = Code(.invalidRequest)
        /// An answer that is not what the API documents.
        public static let invalidResponse = Code(.invalidResponse)
        /// The service account key, URLs or ids configured cannot be used.
        public static let configuration = Code(.configuration)

        public var description: String { known.rawValue }
    }

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
    public var isRetryable: Bool { code == .rateLimited || code == .server || code == .network }

    public var description: String {
        "Google Play Developer API: \(code)" + (httpStatus.map { " (HTTP \($0))" } ?? "") + ": " + message
    }
}
