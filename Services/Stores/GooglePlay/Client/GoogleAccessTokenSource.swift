public import Foundation
import HTTPClient
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// OAuth 2.0 access tokens for a service account (the JWT bearer grant, RFC 7523): signs an
/// RS256 assertion with the account's key, exchanges it at the token endpoint, and hands out the
/// same access token until `renewalMargin` before it expires. Safe from any thread; callers that
/// find no usable token while one is being fetched wait for that fetch instead of starting their
/// own.
///
/// The key, the assertion and the access token are credentials: nothing here logs them or puts
/// them in an error.
public final class GoogleAccessTokenSource: Sendable {
    /// The OAuth scope of the Google Play Developer API.
    public static let androidPublisherScope = "https://www.googleapis.com/auth/androidpublisher"
    /// `exp - iat` of every assertion; Google accepts at most one hour.
    public static let assertionLifetime: Int64 = 3600
    /// The grant type of the exchange.
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The account whose key signs the assertions.
    public let account: GoogleServiceAccount
    /// Where assertions are posted: the configured token URL, else the account's `token_uri`.
    public let tokenURL: URL
    /// The `scope` claim of every assertion.
    public let scope: String
    /// A cached access token is replaced once it has less than this left.
    public let renewalMargin: Duration

    private let requestTimeout: Duration
    private let transport: HTTPClientTransport
    private let metrics: StoreAPIMetrics?
    private let now: @Sendable () -> Date
    private let state = Mutex(State())

    /// An access token and when it stops being valid.
    struct AccessToken: Sendable {
        let value: String
        let expires: Date
    }

    private struct State {
        enum Phase {
            case empty
            case fetching(Task<Result<AccessToken, GooglePlayAPIError>, Never>)
            case ready(AccessToken)
        }
        var phase = Phase.empty
    }

    /// A source of access tokens for `account`.
    ///
    /// - Parameters:
    ///   - tokenURL: where assertions are posted, when not the account's `token_uri` (a test
    ///     server, a simulator). The `aud` claim stays the account's `token_uri`.
    ///   - scope: the `scope` claim.
    ///   - requestTimeout: how long one exchange may take in all.
    ///   - renewalMargin: how long before its expiry a token is replaced.
    ///   - maxResponseBytes: the largest answer read from the token endpoint.
    ///   - now: the clock the assertion's `iat` and the token's expiry are read against.
    /// - Throws: `GooglePlayAPIError` with code `.configuration` when `tokenURL` is neither https
    ///   nor http to a loopback address, the scope is empty, or a duration or limit is not positive.
    public convenience init(
        account: GoogleServiceAccount, tokenURL: URL? = nil, scope: String = androidPublisherScope,
        requestTimeout: Duration = .seconds(15), renewalMargin: Duration = .seconds(300),
        maxResponseBytes: Int = 64 * 1024, now: @escaping @Sendable () -> Date = { Date() }
    ) throws(GooglePlayAPIError) {
        guard requestTimeout > .zero, maxResponseBytes > 0 else {
            throw GooglePlayAPIError(.configuration, "requestTimeout and maxResponseBytes must be positive")
        }
        let transport = HTTPClientTransport(
            requestTimeout: requestTimeout.timeInterval, maxResponseBytes: maxResponseBytes)
        try self.init(
            account: account, tokenURL: tokenURL, scope: scope, requestTimeout: requestTimeout,
            renewalMargin: renewalMargin, transport: transport, now: now)
    }

    /// A source that sends its exchanges over `transport` (shared with the API client), each
    /// counted in `metrics` as the `token` endpoint.
    init(
        account: GoogleServiceAccount, tokenURL: URL?, scope: String, requestTimeout: Duration,
        renewalMargin: Duration, transport: HTTPClientTransport, metrics: StoreAPIMetrics? = nil,
        now: @escaping @Sendable () -> Date
    ) throws(GooglePlayAPIError) {
        let tokenURL = tokenURL ?? account.tokenURI
        guard tokenURL.isHTTPSOrLoopbackHTTP else {
            throw GooglePlayAPIError(
                .configuration,
                "the token URL \(tokenURL.absoluteString) is neither https nor http to a loopback address")
        }
        guard !scope.isEmpty else { throw GooglePlayAPIError(.configuration, "the OAuth scope is empty") }
        guard requestTimeout > .zero, renewalMargin >= .zero else {
            throw GooglePlayAPIError(
                .configuration, "requestTimeout must be positive and renewalMargin not negative")
        }
        self.account = account
        self.metrics = metrics
        self.tokenURL = tokenURL
        self.scope = scope
        self.requestTimeout = requestTimeout
        self.renewalMargin = renewalMargin
        self.transport = transport
        self.now = now
    }

    /// The current access token: the cached one while it has more than `renewalMargin` left,
    /// else a new one from the token endpoint (one exchange however many callers wait for it).
    /// The exchange is shared, so cancelling one caller does not end it; `requestTimeout` does.
    ///
    /// - Throws: `GooglePlayAPIError`: `.unauthorized` when the endpoint refuses the assertion
    ///   (`invalid_grant`, an unknown key, a disabled account), `.network`, `.rateLimited` or
    ///   `.server` when it may pass later, `.invalidResponse` for an answer without a usable
    ///   bearer token, `.configuration` when the key cannot sign.
    public func accessToken() async throws(GooglePlayAPIError) -> String {
        enum Next {
            case use(String)
            case wait(Task<Result<AccessToken, GooglePlayAPIError>, Never>)
        }
        let margin = renewalMargin.timeInterval
        let instant = now()
        let next = state.withLock { state -> Next in
            switch state.phase {
            case .ready(let token) where instant.addingTimeInterval(margin) < token.expires:
                return .use(token.value)
            case .fetching(let task):
                return .wait(task)
            case .empty, .ready:
                let task = Task { await self.exchange() }
                state.phase = .fetching(task)
                return .wait(task)
            }
        }
        switch next {
        case .use(let token): return token
        case .wait(let fetch): return try await fetch.value.get().value
        }
    }

    /// Forgets the cached access token if it is `token` (the one a 401 refused); a newer one,
    /// fetched meanwhile by another caller, stays.
    public func invalidate(ifCurrent token: String) {
        state.withLock { state in
            if case .ready(let current) = state.phase, current.value == token { state.phase = .empty }
        }
    }

    /// One exchange; stores the token it gets (only a fetch is in progress until it ends:
    /// `invalidate(ifCurrent:)` drops a ready token, never a fetch).
    private func exchange() async -> Result<AccessToken, GooglePlayAPIError> {
        let result: Result<AccessToken, GooglePlayAPIError>
        do throws(GooglePlayAPIError) {
            result = .success(try await fetchToken())
        } catch {
            result = .failure(error)
        }
        state.withLock { state in
            guard case .fetching = state.phase else { return }
            switch result {
            case .success(let token): state.phase = .ready(token)
            case .failure: state.phase = .empty
            }
        }
        return result
    }

    // MARK: The exchange

    /// Signs an assertion, posts it, and reads the access token from the answer.
    private func fetchToken() async throws(GooglePlayAPIError) -> AccessToken {
        let issuedAt = now()
        let assertion = try GoogleAssertion(
            account: account, scope: scope, issuedAt: issuedAt, lifetime: Self.assertionLifetime
        ).signed()
        var request = URLRequest(url: tokenURL)
        request.httpMethod = "POST"
        request.timeoutInterval = requestTimeout.timeInterval
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let form =
            "grant_type=" + PercentEncoding.unreserved(Self.grantType) + "&assertion="
            + PercentEncoding.unreserved(assertion)
        request.httpBody = Data(form.utf8)
        let context = "the access token exchange at \(tokenURL.absoluteString) for \(account.clientEmail)"
        let response: HTTPClientTransport.Response
        switch await metrics.perform(transport, request, endpoint: GooglePlayAPIEndpoint.token.rawValue) {
        case .success(let answer): response = answer
        case .failure(.network(let cause)): throw GooglePlayAPIError(.network, "\(context): \(cause)")
        case .failure(.cancelled): throw GooglePlayAPIError(.network, "\(context): cancelled")
        case .failure(.tooLarge(let limit)):
            throw GooglePlayAPIError(.invalidResponse, "\(context): the answer is longer than \(limit) bytes")
        }
        return try Self.accessToken(from: response, issuedAt: issuedAt, context: context)
    }

    /// The access token in a token endpoint answer, valid from `issuedAt` for `expires_in` seconds.
    static func accessToken(from response: HTTPClientTransport.Response, issuedAt: Date, context: String)
        throws(GooglePlayAPIError) -> AccessToken
    {
        let status = response.status
        guard (200...299).contains(status) else {
            let refusal = try? JSONDecoder().decode(ErrorBody.self, from: response.body)
            let reason = [refusal?.error, refusal?.errorDescription].compactMap { $0?.printableASCII() }
                .filter { !$0.isEmpty }.joined(separator: ": ")
            let message = context + (reason.isEmpty ? "" : ": " + reason)
            switch status {
            case 429: throw GooglePlayAPIError(.rateLimited, message, httpStatus: status)
            case 500...599: throw GooglePlayAPIError(.server, message, httpStatus: status)
            case 400...499: throw GooglePlayAPIError(.unauthorized, message, httpStatus: status)
            default:
                throw GooglePlayAPIError(.invalidResponse, "\(context): unexpected answer", httpStatus: status)
            }
        }
        func invalid(_ why: String) -> GooglePlayAPIError {
            GooglePlayAPIError(.invalidResponse, "\(context): the answer \(why)", httpStatus: status)
        }
        let body: TokenBody
        do throws(JSONAnswer.Problem) {
            body = try JSONAnswer.decode(TokenBody.self, from: response.body)
        } catch {
            throw invalid("\(error)")
        }
        guard body.tokenType.lowercased() == "bearer" else { throw invalid("has a token_type other than Bearer") }
        guard !body.accessToken.isEmpty,
            body.accessToken.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
            body.accessToken.utf8.count <= 8192
        else { throw invalid("has an access_token that cannot be sent in a header") }
        guard body.expiresIn > 0 else { throw invalid("has an expires_in that is not positive") }
        return AccessToken(
            value: body.accessToken, expires: issuedAt.addingTimeInterval(TimeInterval(body.expiresIn)))
    }

    /// A successful token endpoint answer.
    struct TokenBody: Decodable {
        let accessToken: String
        let expiresIn: Int64
        let tokenType: String

        private enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
            case tokenType = "token_type"
        }
    }

    /// An OAuth error answer (RFC 6749 §5.2).
    struct ErrorBody: Decodable {
        let error: String?
        let errorDescription: String?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            error = try? container.decodeIfPresent(String.self, forKey: .error)
            errorDescription = try? container.decodeIfPresent(String.self, forKey: .errorDescription)
        }

        private enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }
}
