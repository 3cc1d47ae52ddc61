public import Crypto
public import Foundation
public import HTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The App Store Server API's endpoints as `store_api_*` metrics name them.
public enum AppStoreAPIEndpoint: String, Sendable, CaseIterable {
    case subscriptionStatuses = "subscription_statuses"
    case transactionInfo = "transaction_info"
    case transactionHistory = "transaction_history"
    case notificationHistory = "notification_history"
    case lookupOrder = "lookup_order"
    case extendRenewal = "extend_renewal"
    case massExtend = "mass_extend"
    case massExtendStatus = "mass_extend_status"
    case consumption
    case refundHistory = "refund_history"
    case appAccountToken = "app_account_token"
}

/// `AppStoreAPI` over HTTPS with URLSession: signs its own bearer JWT with the App Store
/// Connect key, retries rate limits, server errors and network failures with full-jitter
/// exponential backoff, follows every page of the paginated calls, and maps every failure to
/// an `AppStoreAPIError`.
///
/// What a hostile or broken server can cost is bounded: bodies above `maxResponseBytes` are cut
/// off, paginated calls stop after `maxPages` pages, redirects are not followed, and a request
/// is tried at most `maxAttempts` times. The bearer token never appears in an error or a log.
public final class AppStoreServerAPIClient: AppStoreAPI {
    /// Who the client is to Apple, where it sends requests, and how it retries.
    public struct Configuration: Sendable {
        /// The App Store Connect API key id (the `kid` of the token).
        public var keyID: String
        /// The App Store Connect issuer id (the `iss` claim).
        public var issuerID: String
        /// The app's bundle id (the `bid` claim).
        public var bundleID: String
        /// The App Store Connect API key, a P-256 key (`loadPrivateKey(p8Path:)` reads a .p8 file).
        public var privateKey: PrivateKey
        /// Where Production requests go. Must be https (http only to a loopback address, for tests).
        public var productionBaseURL = AppStoreServerAPIClient.defaultProductionBaseURL
        /// Where Sandbox requests go. Must be https (http only to a loopback address, for tests).
        public var sandboxBaseURL = AppStoreServerAPIClient.defaultSandboxBaseURL
        /// How long one attempt of a request may take in all before it fails as `.network`.
        public var requestTimeout: Duration = .seconds(15)
        /// The most attempts of one request, the first included.
        public var maxAttempts = 4
        /// The backoff cap before the first retry; it doubles for each later retry.
        public var baseBackoff: Duration = .milliseconds(500)
        /// The longest wait between attempts, `Retry-After` included.
        public var maxBackoff: Duration = .seconds(30)
        /// When Apple answers error 4040010 (transaction id not found in this environment), try
        /// the same call once in the other environment (Production and Sandbox). When false, such
        /// a call fails with `.wrongEnvironment`.
        public var fallBackToOtherEnvironment = false
        /// The largest response body read; a longer one fails the call with `.invalidResponse`.
        public var maxResponseBytes = 4 << 20
        /// The most pages a paginated call reads; a server with more fails it with `.invalidResponse`.
        public var maxPages = 1000
        /// The clock the token's `iat` and `exp` and HTTP-date `Retry-After` values are read against.
        public var now: @Sendable () -> Date = { Date() }
        /// Waits between attempts; throwing (on cancellation) ends the call with `.network`.
        public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
        /// Where each HTTP exchange is counted and timed, by `AppStoreAPIEndpoint`; nil for nowhere.
        public var metrics: StoreAPIMetrics?

        /// A configuration with the default URLs, timeout, retries and bounds.
        public init(keyID: String, issuerID: String, bundleID: String, privateKey: PrivateKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.bundleID = bundleID
            self.privateKey = privateKey
        }

        /// Reads an App Store Connect API key from a .p8 file (unencrypted PKCS#8 PEM, P-256).
        ///
        /// - Throws: `AppStoreAPIError` with code `.configuration` naming `path` when the file
        ///   cannot be read, holds no private key, or holds a key that is not P-256. The message
        ///   never contains the file's contents.
        public static func loadPrivateKey(p8Path path: String) throws(AppStoreAPIError) -> PrivateKey {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw AppStoreAPIError(.configuration, "cannot read the App Store Connect API key file \(path)")
            }
            guard data.count <= 64 * 1024, let pem = String(data: data, encoding: .utf8) else {
                throw AppStoreAPIError(.configuration, "\(path) is not a PEM private key file")
            }
            let key: PrivateKey
            do {
                key = try PrivateKey(pem: pem)
            } catch {
                throw AppStoreAPIError(.configuration, "\(path) holds no readable unencrypted PEM private key")
            }
            guard key.kind == .p256 else {
                throw AppStoreAPIError(.configuration, "the key in \(path) is not a P-256 (ES256) key")
            }
            return key
        }
    }

    /// `https://api.storekit.apple.com`.
    public static let defaultProductionBaseURL = URL(string: "https://api.storekit.apple.com")!
    /// `https://api.storekit-sandbox.apple.com`.
    public static let defaultSandboxBaseURL = URL(string: "https://api.storekit-sandbox.apple.com")!
    /// Apple's `errorCode` for a transaction id unknown in the environment asked.
    public static let transactionIDNotFoundErrorCode = 4_040_010
    /// The longest transaction id accepted, in UTF-8 bytes.
    public static let maxIDBytes = 128

    /// The configuration the client was made with.
    public let configuration: Configuration
    private let tokens: AppStoreTokenIssuer
    private let transport: HTTPClientTransport
    private let retry: RetryPolicy

    /// A client for `configuration`.
    ///
    /// - Throws: `AppStoreAPIError` with code `.configuration` when an id is empty, the key is
    ///   not P-256, a base URL is not https (or http to a loopback address), or a limit is not
    ///   positive.
    public init(configuration: Configuration) throws(AppStoreAPIError) {
        try Self.validate(configuration)
        self.configuration = configuration
        tokens = AppStoreTokenIssuer(
            keyID: configuration.keyID, issuerID: configuration.issuerID, bundleID: configuration.bundleID,
            key: configuration.privateKey, now: configuration.now)
        transport = HTTPClientTransport(
            requestTimeout: configuration.requestTimeout.timeInterval,
            maxResponseBytes: configuration.maxResponseBytes)
        retry = RetryPolicy(
            maxAttempts: configuration.maxAttempts, baseBackoff: configuration.baseBackoff,
            maxBackoff: configuration.maxBackoff)
    }

    // MARK: AppStoreAPI

    /// `GET /inApps/v1/transactions/{transactionId}`: the signed transaction (JWS), not verified.
    public func transactionInfo(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> String
    {
        let call = HTTPCall(method: "GET", path: "/inApps/v1/transactions/" + (try Self.pathSegment(transactionID)))
        return try await withEnvironmentFallback(environment) { environment throws(AppStoreAPIError) in
            let body = try await send(call, .transactionInfo, in: environment)
            return try Self.decode(TransactionInfoBody.self, body, call: call).signedTransactionInfo
        }
    }

    /// `GET /inApps/v1/subscriptions/{transactionId}`: every subscription group's latest state,
    /// the signed data in it not verified.
    public func allSubscriptionStatuses(transactionID: String, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> AppleSubscriptionStatuses
    {
        let call = HTTPCall(method: "GET", path: "/inApps/v1/subscriptions/" + (try Self.pathSegment(transactionID)))
        return try await withEnvironmentFallback(environment) { environment throws(AppStoreAPIError) in
            try Self.decode(
                AppleSubscriptionStatuses.self, try await send(call, .subscriptionStatuses, in: environment), call: call
            )
        }
    }

    /// `GET /inApps/v2/history/{transactionId}`, following `revision` while `hasMore`: every
    /// signed transaction in the order Apple lists them.
    public func transactionHistory(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> [String]
    {
        try await revisionPages("/inApps/v2/history/", transactionID, .transactionHistory, environment: environment)
    }

    /// `POST /inApps/v1/notifications/history` for notifications sent in [`start`, `end`),
    /// following `paginationToken` while `hasMore`: every entry in the order Apple lists them.
    /// Throws `.invalidRequest` when `start` is not before `end`.
    public func notificationHistory(start: Date, end: Date, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> [AppleNotificationHistoryItem]
    {
        guard start < end else {
            throw AppStoreAPIError(.invalidRequest, "the notification history range must start before it ends")
        }
        let range = NotificationHistoryRequestBody(
            startDate: Self.milliseconds(start), endDate: Self.milliseconds(end))
        let first = HTTPCall(method: "POST", path: "/inApps/v1/notifications/history", body: try Self.encode(range))
        return try await withEnvironmentFallback(environment) { environment throws(AppStoreAPIError) in
            try await collectPages(first, .notificationHistory, in: environment, cursorName: "paginationToken") {
                (page: NotificationHistoryPage) in (page.notificationHistory, page.hasMore, page.paginationToken)
            }
        }
    }

    /// `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken` with body
    /// `{"appAccountToken": "<uuid>"}` (the UUID lowercased). Throws `.invalidRequest` when
    /// `appAccountToken` is not a UUID.
    public func setAppAccountToken(
        originalTransactionID: String, appAccountToken: String, environment: AppleEnvironment
    ) async throws(AppStoreAPIError) {
        guard let uuid = UUID(uuidString: appAccountToken) else {
            throw AppStoreAPIError(.invalidRequest, "the appAccountToken is not a UUID")
        }
        let body = try Self.encode(AppAccountTokenBody(appAccountToken: uuid.uuidString.lowercased()))
        let path = "/inApps/v1/transactions/" + (try Self.pathSegment(originalTransactionID)) + "/appAccountToken"
        let call = HTTPCall(method: "PUT", path: path, body: body)
        try await withEnvironmentFallback(environment) { environment throws(AppStoreAPIError) in
            _ = try await send(call, .appAccountToken, in: environment)
        }
    }

    /// `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}` with `request` as its body.
    /// Apple answers `success` false when it did not extend; that is `.invalidResponse` here, as
    /// an answer without the new date would be.
    public func extendRenewalDate(
        originalTransactionID: String, _ request: AppleRenewalExtensionRequest, environment: AppleEnvironment
    ) async throws(AppStoreAPIError) -> AppleRenewalExtension {
        let path = "/inApps/v1/subscriptions/extend/" + (try Self.pathSegment(originalTransactionID))
        let call = HTTPCall(method: "PUT", path: path, body: try Self.encode(request))
        let answer = try await withEnvironmentFallback(environment) { environment throws(AppStoreAPIError) in
            try Self.decode(
                AppleRenewalExtension.self, try await send(call, .extendRenewal, in: environment), call: call)
        }
        guard answer.success == true, answer.effectiveDate != nil else {
            throw AppStoreAPIError(
                .invalidResponse, "\(call.summary) answered without success and an effectiveDate", httpStatus: 200)
        }
        return answer
    }

    /// `GET /inApps/v2/refund/lookup/{transactionId}`, following `revision` while `hasMore`:
    /// every refunded transaction, signed, in the order Apple lists them.
    public func refundHistory(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> [String]
    {
        try await revisionPages("/inApps/v2/refund/lookup/", transactionID, .refundHistory, environment: environment)
    }

    /// `GET /inApps/v1/lookup/{orderId}` in production: the order's signed transactions, not
    /// verified; none when `status` is 1 (not an order of this app). Any other status is
    /// `.invalidResponse`.
    public func lookUpOrderID(_ orderID: String) async throws(AppStoreAPIError) -> [String] {
        let call = HTTPCall(method: "GET", path: "/inApps/v1/lookup/" + (try Self.pathSegment(orderID)))
        let answer = try Self.decode(
            OrderLookupBody.self, try await send(call, .lookupOrder, in: .production), call: call)
        switch answer.status {
        case 0: return answer.signedTransactions ?? []
        case 1: return []
        default:
            throw AppStoreAPIError(
                .invalidResponse, "\(call.summary) answered status \(answer.status), not 0 or 1", httpStatus: 200)
        }
    }

    /// `POST /inApps/v1/subscriptions/extend/mass` with `request` as its body; answers the
    /// `requestIdentifier` Apple accepted (`MassExtendRenewalDateResponse`).
    public func massExtendRenewalDate(_ request: AppleMassExtensionRequest, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> String
    {
        struct Accepted: Decodable { var requestIdentifier: String? }
        let call = HTTPCall(
            method: "POST", path: "/inApps/v1/subscriptions/extend/mass", body: try Self.encode(request))
        let answer = try Self.decode(Accepted.self, try await send(call, .massExtend, in: environment), call: call)
        guard let accepted = answer.requestIdentifier, !accepted.isEmpty else {
            throw AppStoreAPIError(
                .invalidResponse, "\(call.summary) answered without a requestIdentifier", httpStatus: 200)
        }
        return accepted
    }

    /// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`.
    public func massExtensionStatus(productID: String, requestIdentifier: String, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> AppleMassExtensionStatus
    {
        let path =
            "/inApps/v1/subscriptions/extend/mass/" + (try Self.pathSegment(productID)) + "/"
            + (try Self.pathSegment(requestIdentifier))
        let call = HTTPCall(method: "GET", path: path)
        return try Self.decode(
            AppleMassExtensionStatus.self, try await send(call, .massExtendStatus, in: environment), call: call)
    }

    /// `PUT /inApps/v2/transactions/consumption/{transactionId}` with `request` as its body.
    public func sendConsumptionInformation(
        transactionID: String, _ request: AppleConsumptionInformation, environment: AppleEnvironment
    ) async throws(AppStoreAPIError) {
        let path = "/inApps/v2/transactions/consumption/" + (try Self.pathSegment(transactionID))
        let call = HTTPCall(method: "PUT", path: path, body: try Self.encode(request))
        _ = try await withEnvironmentFallback(environment) { environment throws(AppStoreAPIError) in
            try await send(call, .consumption, in: environment)
        }
    }

    // MARK: Requests

    /// Runs `body` in `environment` and, when Apple answers 4040010 there and the configuration
    /// allows it, once more in the other environment. A call unknown in both fails `.notFound`.
    private func withEnvironmentFallback<T>(
        _ environment: AppleEnvironment, _ body: (AppleEnvironment) async throws(AppStoreAPIError) -> T
    ) async throws(AppStoreAPIError) -> T {
        do throws(AppStoreAPIError) {
            return try await body(environment)
        } catch let error where error.code == .wrongEnvironment && configuration.fallBackToOtherEnvironment {
            let other: AppleEnvironment = environment == .production ? .sandbox : .production
            do throws(AppStoreAPIError) {
                return try await body(other)
            } catch let error where error.code == .wrongEnvironment {
                throw AppStoreAPIError(
                    .notFound, "not found in \(environment.rawValue) nor in \(other.rawValue): \(error.message)",
                    httpStatus: error.httpStatus, apiErrorCode: error.apiErrorCode)
            }
        }
    }

    /// Every signed transaction of `GET {prefix}{transactionId}`, paged by `revision` while
    /// `hasMore` (Get Transaction History v2, Get Refund History).
    private func revisionPages(
        _ prefix: String, _ transactionID: String, _ endpoint: AppStoreAPIEndpoint, environment: AppleEnvironment
    ) async throws(AppStoreAPIError) -> [String] {
        let first = HTTPCall(method: "GET", path: prefix + (try Self.pathSegment(transactionID)))
        return try await withEnvironmentFallback(environment) { environment throws(AppStoreAPIError) in
            try await collectPages(first, endpoint, in: environment, cursorName: "revision") {
                (page: HistoryPage) in (page.signedTransactions, page.hasMore, page.revision)
            }
        }
    }

    /// Reads every page of a paginated call: `page` gives a page's items, whether there are more,
    /// and the cursor sent as the `cursorName` query parameter for the next page.
    private func collectPages<Page: Decodable & Sendable, Item>(
        _ first: HTTPCall, _ endpoint: AppStoreAPIEndpoint, in environment: AppleEnvironment, cursorName: String,
        _ page: (Page) -> (items: [Item], hasMore: Bool, cursor: String?)
    ) async throws(AppStoreAPIError) -> [Item] {
        var items: [Item] = []
        var call = first
        var cursors: Set<String> = []
        for _ in 0..<configuration.maxPages {
            let (pageItems, hasMore, cursor) = page(
                try Self.decode(Page.self, try await send(call, endpoint, in: environment), call: call))
            items += pageItems
            guard hasMore else { return items }
            guard let cursor, !cursor.isEmpty else {
                throw AppStoreAPIError(.invalidResponse, "\(call.summary) has more pages but no \(cursorName)")
            }
            guard cursors.insert(cursor).inserted else {
                throw AppStoreAPIError(.invalidResponse, "\(call.summary) repeated a \(cursorName) it had sent before")
            }
            call = first
            call.query = [(cursorName, cursor)]
        }
        throw AppStoreAPIError(.invalidResponse, "\(first.summary) has more than \(configuration.maxPages) pages")
    }

    /// Sends `call` to `environment`'s server, retrying what may succeed later, and returns the
    /// body of its 2xx answer. Each exchange is counted under `endpoint`.
    private func send(_ call: HTTPCall, _ endpoint: AppStoreAPIEndpoint, in environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> Data
    {
        guard var request = call.urlRequest(below: try baseURL(of: environment), timeout: configuration.requestTimeout)
        else {
            throw AppStoreAPIError(.invalidRequest, "\(call.summary) does not make a URL")
        }
        let context = "\(call.summary) in \(environment.rawValue)"
        return try await retry.run(
            sleep: configuration.sleep,
            interrupted: AppStoreAPIError(.network, "\(context): cancelled while waiting to retry")
        ) { _ in
            do throws(AppStoreAPIError) {
                request.setValue("Bearer " + (try tokens.token()), forHTTPHeaderField: "Authorization")
            } catch {
                return .failure(error)
            }
            return Self.verdict(
                await configuration.metrics.perform(transport, request, endpoint: endpoint.rawValue), context: context,
                now: configuration.now())
        }
    }

    /// The base URL of `environment`'s server.
    private func baseURL(of environment: AppleEnvironment) throws(AppStoreAPIError) -> URL {
        switch environment {
        case .production: return configuration.productionBaseURL
        case .sandbox: return configuration.sandboxBaseURL
        case .xcode, .localTesting:
            throw AppStoreAPIError(
                .invalidRequest, "the App Store Server API has no \(environment.rawValue) environment")
        }
    }

    // MARK: Answers

    /// Classifies one attempt's outcome; `context` (method, path, environment) heads messages.
    static func verdict(
        _ outcome: Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>, context: String, now: Date
    ) -> StoreAPIAttempt<AppStoreAPIError> {
        let response: HTTPClientTransport.Response
        switch outcome {
        case .success(let answer): response = answer
        case .failure(let failure):
            return .transportFailure(failure, context: context) { AppStoreAPIError($0, $1) }
        }
        let status = response.status
        if (200...299).contains(status) { return .success(response.body) }
        let apple = try? JSONDecoder().decode(ErrorBody.self, from: response.body)
        let apiErrorCode = apple?.errorCode
        let message = context + (apple?.errorMessage.map { ": " + $0.printableASCII() } ?? "")
        let retryAfter = response.headers["retry-after"].flatMap { RetryPolicy.retryAfter($0, now: now) }
        func error(_ code: AppStoreAPIError.Code) -> AppStoreAPIError {
            AppStoreAPIError(code, message, httpStatus: status, apiErrorCode: apiErrorCode, retryAfter: retryAfter)
        }
        switch status {
        case 404 where apiErrorCode == transactionIDNotFoundErrorCode: return .failure(error(.wrongEnvironment))
        case 401: return .failure(error(.unauthorized))
        case 404: return .failure(error(.notFound))
        case 429: return .retry(error(.rateLimited), retryAfter: retryAfter)
        case 500...599: return .retry(error(.server), retryAfter: retryAfter)
        case 400...499: return .failure(error(.invalidRequest))
        case 300...399:
            return .failure(
                AppStoreAPIError(.invalidResponse, "\(context): redirect not followed", httpStatus: status))
        default:
            return .failure(AppStoreAPIError(.invalidResponse, "\(context): unexpected answer", httpStatus: status))
        }
    }

    /// Decodes a 2xx body, naming what is missing or mistyped (never the body itself).
    static func decode<T: Decodable>(_ type: T.Type, _ body: Data, call: HTTPCall) throws(AppStoreAPIError) -> T {
        do throws(JSONAnswer.Problem) {
            return try JSONAnswer.decode(type, from: body)
        } catch {
            throw AppStoreAPIError(.invalidResponse, "the answer to \(call.summary) \(error)", httpStatus: 200)
        }
    }

    private static func encode(_ value: some Encodable) throws(AppStoreAPIError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            return try encoder.encode(value)
        } catch {
            throw AppStoreAPIError(.invalidRequest, "the request body cannot be encoded")
        }
    }

    // MARK: Ids and encoding

    /// `id` as one percent-encoded path segment: everything but ALPHA, DIGIT, `-`, `.`, `_` and
    /// `~` is encoded. Throws `.invalidRequest` for an empty id, one longer than `maxIDBytes`,
    /// and `.` or `..` (which would change the path).
    static func pathSegment(_ id: String) throws(AppStoreAPIError) -> String {
        guard !id.isEmpty else { throw AppStoreAPIError(.invalidRequest, "the transaction id is empty") }
        guard id.utf8.count <= maxIDBytes else {
            throw AppStoreAPIError(.invalidRequest, "the transaction id is longer than \(maxIDBytes) bytes")
        }
        guard !PercentEncoding.isDotSegment(id) else {
            throw AppStoreAPIError(.invalidRequest, "the transaction id is a dot segment")
        }
        return PercentEncoding.unreserved(id)
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    // MARK: Configuration checks

    private static func validate(_ configuration: Configuration) throws(AppStoreAPIError) {
        for (name, value) in [
            ("keyID", configuration.keyID), ("issuerID", configuration.issuerID), ("bundleID", configuration.bundleID),
        ] where value.isEmpty {
            throw AppStoreAPIError(.configuration, "\(name) is empty")
        }
        guard configuration.privateKey.kind == .p256 else {
            throw AppStoreAPIError(.configuration, "the App Store Connect API key \(configuration.keyID) is not P-256")
        }
        for (name, url) in [
            ("productionBaseURL", configuration.productionBaseURL), ("sandboxBaseURL", configuration.sandboxBaseURL),
        ] where !url.isHTTPSOrLoopbackHTTP {
            throw AppStoreAPIError(
                .configuration, "\(name) \(url.absoluteString) is neither https nor http to a loopback address")
        }
        guard configuration.requestTimeout > .zero else {
            throw AppStoreAPIError(.configuration, "requestTimeout must be positive")
        }
        guard configuration.maxAttempts >= 1 else {
            throw AppStoreAPIError(.configuration, "maxAttempts must be at least 1")
        }
        guard configuration.baseBackoff >= .zero, configuration.maxBackoff >= .zero else {
            throw AppStoreAPIError(.configuration, "backoff durations must not be negative")
        }
        guard configuration.maxResponseBytes > 0, configuration.maxPages > 0 else {
            throw AppStoreAPIError(.configuration, "maxResponseBytes and maxPages must be positive")
        }
    }
}
