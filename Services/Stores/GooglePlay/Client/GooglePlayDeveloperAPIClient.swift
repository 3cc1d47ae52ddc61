public import Foundation
public import HTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Google Play Developer API's endpoints, and the OAuth token exchange, as `store_api_*`
/// metrics name them. Consuming a one-time product counts as `acknowledge`: it is how a
/// consumable is acknowledged.
public enum GooglePlayAPIEndpoint: String, Sendable, CaseIterable {
    case subscriptionsGet = "subscriptions_get"
    case productsGet = "products_get"
    case acknowledge
    case voidedPurchases = "voided_purchases"
    case revoke
    case refund
    case deferral = "defer"
    case cancel
    case token
}

/// `GooglePlayAPI` over HTTPS with URLSession: authenticates with OAuth access tokens of a
/// service account (`GoogleAccessTokenSource`), retries rate limits, server errors and network
/// failures with full-jitter exponential backoff, gives a brand-new purchase token a moment to
/// appear, follows every page of the voided purchases, and maps every failure to a
/// `GooglePlayAPIError`.
///
/// What a hostile or broken server can cost is bounded: bodies above `maxResponseBytes` are cut
/// off, the voided purchases stop after `maxVoidedPurchasePages` pages, redirects are not
/// followed, and a request is tried at most `maxAttempts` times (plus the brief retries of a
/// 404 and one retry with a new access token after a 401). Neither the access token nor a
/// purchase token appears in an error.
public final class GooglePlayDeveloperAPIClient: GooglePlayAPI {
    /// Who the client is to Google, where it sends requests, and how it retries.
    public struct Configuration: Sendable {
        /// The service account whose key signs the OAuth assertions.
        public var serviceAccount: GoogleServiceAccount
        /// Where API requests go. Must be https (http only to a loopback address, for tests and
        /// the simulator).
        public var baseURL = GooglePlayDeveloperAPIClient.defaultBaseURL
        /// Where OAuth assertions are posted; nil for the service account's `token_uri`. Must be
        /// https (http only to a loopback address). The assertions' `aud` stays the `token_uri`.
        public var tokenURL: URL?
        /// How long one attempt of a request (or one token exchange) may take before it fails
        /// as `.network`.
        public var requestTimeout: Duration = .seconds(15)
        /// The most attempts of one request, the first included, when it meets 429, 5xx or
        /// network failures.
        public var maxAttempts = 4
        /// The backoff cap before the first retry; it doubles for each later retry.
        public var baseBackoff: Duration = .milliseconds(500)
        /// The longest wait between attempts, `Retry-After` included.
        public var maxBackoff: Duration = .seconds(30)
        /// How many times `subscription` and `productPurchase` ask about a token that answers 404
        /// before they call it `.notFound` (Google may not know a brand-new token for a second).
        public var notFoundAttempts = 3
        /// The wait between those attempts.
        public var notFoundRetryDelay: Duration = .milliseconds(750)
        /// A cached access token is replaced once it has less than this left.
        public var accessTokenRenewalMargin: Duration = .seconds(300)
        /// The largest response body read; a longer one fails the call with `.invalidResponse`.
        public var maxResponseBytes = 4 << 20
        /// The most pages `voidedPurchases` reads (1000 purchases each); a server with more fails
        /// the call with `.invalidResponse`.
        public var maxVoidedPurchasePages = 100
        /// The clock the assertions, the access token's expiry and HTTP-date `Retry-After`
        /// values are read against.
        public var now: @Sendable () -> Date = { Date() }
        /// Waits between attempts; throwing (on cancellation) ends the call with `.network`.
        public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
        /// Where each HTTP exchange, the token exchange's included, is counted and timed, by
        /// `GooglePlayAPIEndpoint`; nil for nowhere.
        public var metrics: StoreAPIMetrics?

        /// A configuration with the default URLs, timeout, retries and bounds.
        public init(serviceAccount: GoogleServiceAccount) {
            self.serviceAccount = serviceAccount
        }
    }

    /// `https://androidpublisher.googleapis.com`.
    public static let defaultBaseURL = URL(string: "https://androidpublisher.googleapis.com")!
    /// The longest purchase token accepted, in UTF-8 bytes.
    public static let maxTokenBytes = 4096
    /// The longest product or subscription id accepted, in UTF-8 bytes.
    public static let maxProductIDBytes = 256
    /// The longest package name accepted, in UTF-8 bytes.
    public static let maxPackageNameBytes = 255
    /// How many voided purchases one page asks for (the API's maximum).
    public static let voidedPurchasesPageSize = 1000

    /// The configuration the client was made with.
    public let configuration: Configuration
    /// Where the client gets its access tokens.
    public let tokenSource: GoogleAccessTokenSource
    private let transport: HTTPClientTransport
    private let retry: RetryPolicy

    /// A client for `configuration`.
    ///
    /// - Throws: `GooglePlayAPIError` with code `.configuration` when a URL is not https (or
    ///   http to a loopback address), or a limit or duration is not positive.
    public init(configuration: Configuration) throws(GooglePlayAPIError) {
        try Self.validate(configuration)
        self.configuration = configuration
        transport = HTTPClientTransport(
            requestTimeout: configuration.requestTimeout.timeInterval,
            maxResponseBytes: configuration.maxResponseBytes)
        tokenSource = try GoogleAccessTokenSource(
            account: configuration.serviceAccount, tokenURL: configuration.tokenURL,
            scope: GoogleAccessTokenSource.androidPublisherScope, requestTimeout: configuration.requestTimeout,
            renewalMargin: configuration.accessTokenRenewalMargin, transport: transport, metrics: configuration.metrics,
            now: configuration.now)
        retry = RetryPolicy(
            maxAttempts: configuration.maxAttempts, baseBackoff: configuration.baseBackoff,
            maxBackoff: configuration.maxBackoff)
    }

    // MARK: GooglePlayAPI

    /// `purchases.subscriptionsv2.get`. A 404 is asked again `notFoundAttempts` times in all
    /// before it is `.notFound`; 410 is `.gone`.
    public func subscription(packageName: String, token: String) async throws(GooglePlayAPIError)
        -> SubscriptionPurchaseV2
    {
        let call = HTTPCall(
            method: "GET", path: try Self.subscriptionV2Path(packageName, token),
            summary: "purchases.subscriptionsv2.get for \(packageName)")
        let body = try await send(call, .subscriptionsGet, retryingNotFound: true)
        var purchase = try Self.decode(SubscriptionPurchaseV2.self, body, call: call)
        purchase.raw = Self.raw(body)
        return purchase
    }

    /// `purchases.subscriptions.acknowledge`, with an empty JSON object as the body.
    public func acknowledgeSubscription(packageName: String, subscriptionID: String, token: String)
        async throws(GooglePlayAPIError)
    {
        let path =
            try Self.applicationPath(packageName) + "/purchases/subscriptions/"
            + (try Self.productSegment(subscriptionID, what: "subscription id")) + "/tokens/"
            + (try Self.tokenSegment(token)) + ":acknowledge"
        let call = HTTPCall(
            method: "POST", path: path, body: Self.emptyObject,
            summary:
                "purchases.subscriptions.acknowledge of \(subscriptionID.printableASCII(limit: 100)) for \(packageName)"
        )
        _ = try await send(call, .acknowledge, retryingNotFound: false)
    }

    /// `purchases.products.get`. A 404 is asked again `notFoundAttempts` times in all before it
    /// is `.notFound`; 410 is `.gone`.
    public func productPurchase(packageName: String, productID: String, token: String)
        async throws(GooglePlayAPIError) -> ProductPurchase
    {
        let call = HTTPCall(
            method: "GET", path: try Self.productPath(packageName, productID, token),
            summary: "purchases.products.get of \(productID.printableASCII(limit: 100)) for \(packageName)")
        let body = try await send(call, .productsGet, retryingNotFound: true)
        var purchase = try Self.decode(ProductPurchase.self, body, call: call)
        purchase.raw = Self.raw(body)
        return purchase
    }

    /// `purchases.products.acknowledge`, with an empty JSON object as the body.
    public func acknowledgeProduct(packageName: String, productID: String, token: String)
        async throws(GooglePlayAPIError)
    {
        let call = HTTPCall(
            method: "POST", path: try Self.productPath(packageName, productID, token) + ":acknowledge",
            body: Self.emptyObject,
            summary: "purchases.products.acknowledge of \(productID.printableASCII(limit: 100)) for \(packageName)")
        _ = try await send(call, .acknowledge, retryingNotFound: false)
    }

    /// `purchases.products.consume` (no body).
    public func consumeProduct(packageName: String, productID: String, token: String)
        async throws(GooglePlayAPIError)
    {
        let call = HTTPCall(
            method: "POST", path: try Self.productPath(packageName, productID, token) + ":consume",
            summary: "purchases.products.consume of \(productID.printableASCII(limit: 100)) for \(packageName)")
        _ = try await send(call, .acknowledge, retryingNotFound: false)
    }

    /// `purchases.voidedpurchases.list` for purchases voided in [`start`, `end`), subscriptions
    /// included (`type=1`), 1000 a page, following `tokenPagination.nextPageToken`: every entry
    /// in the order Google lists them. Throws `.invalidRequest` when `start` is not before `end`,
    /// `.invalidResponse` when a page token repeats or there are more than
    /// `maxVoidedPurchasePages` pages.
    public func voidedPurchases(packageName: String, start: Date, end: Date) async throws(GooglePlayAPIError)
        -> [VoidedPurchase]
    {
        guard start < end else {
            throw GooglePlayAPIError(.invalidRequest, "the voided purchases range must start before it ends")
        }
        let query: [(name: String, value: String)] = [
            ("startTime", String(Self.milliseconds(start))), ("endTime", String(Self.milliseconds(end))),
            ("type", "1"), ("includeQuantityBasedPartialRefund", "true"),
            ("maxResults", String(Self.voidedPurchasesPageSize)),
        ]
        let first = HTTPCall(
            method: "GET", path: try Self.applicationPath(packageName) + "/purchases/voidedpurchases", query: query,
            summary: "purchases.voidedpurchases.list for \(packageName)")
        var purchases: [VoidedPurchase] = []
        var call = first
        var pageTokens: Set<String> = []
        for _ in 0..<configuration.maxVoidedPurchasePages {
            let page = try Self.decode(
                VoidedPurchasesPage.self, try await send(call, .voidedPurchases, retryingNotFound: false), call: call)
            purchases += (page.voidedPurchases ?? []).map { entry in
                var entry = entry
                entry.raw = (try? Self.rawEncoder.encode(entry)).flatMap { Self.raw($0) }
                return entry
            }
            guard let next = page.tokenPagination?.nextPageToken, !next.isEmpty else { return purchases }
            guard pageTokens.insert(next).inserted else {
                throw GooglePlayAPIError(.invalidResponse, "\(call.summary) repeated a page token it had sent before")
            }
            call = first
            call.query.append(("token", next))
        }
        throw GooglePlayAPIError(
            .invalidResponse, "\(first.summary) has more than \(configuration.maxVoidedPurchasePages) pages")
    }

    // MARK: Sending

    /// One attempt, for the calls that change a purchase.
    private static let single = RetryPolicy(maxAttempts: 1, baseBackoff: .zero, maxBackoff: .zero)

    /// `{}`, the body of the acknowledge calls.
    private static let emptyObject = Data("{}".utf8)

    /// Sends `call`, retrying what may succeed later, and returns the body of its 2xx answer.
    /// With `retryingNotFound`, a 404 is asked again up to `notFoundAttempts` times in all.
    /// With `once`, an answer that may succeed later (429, 5xx, a network failure) is not tried
    /// again: it ends the call (a refused access token is still renewed once).
    func send(_ call: HTTPCall, _ endpoint: GooglePlayAPIEndpoint, retryingNotFound: Bool, once: Bool = false)
        async throws(GooglePlayAPIError) -> Data
    {
        guard var request = call.urlRequest(below: configuration.baseURL, timeout: configuration.requestTimeout)
        else {
            throw GooglePlayAPIError(.invalidRequest, "\(call.summary) does not make a URL")
        }
        var notFoundAttempt = 1
        var renewedAccessToken = false
        return try await (once ? Self.single : retry).run(
            sleep: configuration.sleep,
            interrupted: GooglePlayAPIError(.network, "\(call.summary): cancelled while waiting to retry")
        ) { _ in
            let token: String
            do throws(GooglePlayAPIError) {
                token = try await tokenSource.accessToken()
            } catch {
                // The token endpoint is down or busy: wait and retry as for the API itself.
                return error.isRetryable ? .retry(error, retryAfter: nil) : .failure(error)
            }
            request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
            let verdict = Self.verdict(
                await configuration.metrics.perform(transport, request, endpoint: endpoint.rawValue),
                summary: call.summary, now: configuration.now())
            guard case .failure(let error) = verdict else { return verdict }
            switch error.httpStatus {
            case 401 where !renewedAccessToken:
                // The access token was refused: a new one may pass, once.
                renewedAccessToken = true
                tokenSource.invalidate(ifCurrent: token)
                return .again(after: nil)
            case 404 where retryingNotFound && notFoundAttempt < configuration.notFoundAttempts:
                // A brand-new purchase token may be unknown for a moment.
                notFoundAttempt += 1
                return .again(after: configuration.notFoundRetryDelay)
            default:
                return verdict
            }
        }
    }

    // MARK: Answers

    /// Classifies one attempt's outcome; `summary` (the API method and package) heads messages.
    static func verdict(
        _ outcome: Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>, summary: String, now: Date
    ) -> StoreAPIAttempt<GooglePlayAPIError> {
        let response: HTTPClientTransport.Response
        switch outcome {
        case .success(let answer): response = answer
        case .failure(let failure):
            return .transportFailure(failure, context: summary) { GooglePlayAPIError($0, $1) }
        }
        let status = response.status
        if (200...299).contains(status) { return .success(response.body) }
        let google = (try? JSONDecoder().decode(ErrorBody.self, from: response.body))?.error
        let reason = (google?.message ?? google?.status)?.printableASCII() ?? ""
        let message = summary + (reason.isEmpty ? "" : ": " + reason)
        let retryAfter = response.headers["retry-after"].flatMap { RetryPolicy.retryAfter($0, now: now) }
        func error(_ code: GooglePlayAPIError.Code) -> GooglePlayAPIError {
            var error = GooglePlayAPIError(code, message, httpStatus: status)
            error.googleStatus = google?.status?.printableASCII(limit: 64)
            error.retryAfter = retryAfter
            return error
        }
        switch status {
        case 401: return .failure(error(.unauthorized))
        case 403: return .failure(error(.unauthorized))
        case 404: return .failure(error(.notFound))
        case 410: return .failure(error(.gone))
        case 429: return .retry(error(.rateLimited), retryAfter: retryAfter)
        case 500...599: return .retry(error(.server), retryAfter: retryAfter)
        case 400...499: return .failure(error(.invalidRequest))
        case 300...399:
            return .failure(
                GooglePlayAPIError(.invalidResponse, "\(summary): redirect not followed", httpStatus: status))
        default:
            return .failure(GooglePlayAPIError(.invalidResponse, "\(summary): unexpected answer", httpStatus: status))
        }
    }

    /// Decodes a 2xx body, naming what is missing or mistyped (never the body itself).
    /// An answer's body as text to keep with what is recorded from it; nil past
    /// `SubscriptionPurchaseV2.maxRawBytes`.
    static func raw(_ body: Data) -> String? {
        body.count <= SubscriptionPurchaseV2.maxRawBytes ? String(decoding: body, as: UTF8.self) : nil
    }

    /// One voided entry as JSON, its fields in a stable order.
    static let rawEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func decode<T: Decodable>(_ type: T.Type, _ body: Data, call: HTTPCall) throws(GooglePlayAPIError) -> T {
        do throws(JSONAnswer.Problem) {
            return try JSONAnswer.decode(type, from: body)
        } catch {
            throw GooglePlayAPIError(.invalidResponse, "the answer to \(call.summary) \(error)", httpStatus: 200)
        }
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
