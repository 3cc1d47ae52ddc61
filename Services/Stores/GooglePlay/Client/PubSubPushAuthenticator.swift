import Crypto
public import Foundation
import HTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Authenticates Pub/Sub push requests by the OIDC token Pub/Sub puts in their
/// `Authorization: Bearer` header. What it checks, in order (a token fails at the first check it
/// does not pass):
///
/// 1. shape: a bearer token of at most `maxTokenBytes`, a compact JWS whose header is a JSON
///    object;
/// 2. the header: `alg` is RS256 (so never `none` or HS256), no `crit`, a `kid`;
/// 3. the key: the signing key set's key with that `kid` (`RefreshingKeySet` says when the
///    set is fetched again: an unknown `kid` triggers one rate-limited refresh);
/// 4. the RS256 signature over `header.payload` with that key;
/// 5. the claims: `iss` is Google's, `aud` is the configured audience, `exp` has not passed and
///    `iat` is not in the future (both within `clockSkew`), the lifetime `exp - iat` is positive
///    and at most `maxTokenLifetime`, `email` is the configured push service account (compared
///    without regard to case) and `email_verified` is true.
///
/// Every refusal is a `PubSubPushAuthenticationError`; only `retryable` (the keys could not be
/// fetched) means the same push may pass later.
public final class PubSubPushAuthenticator: Sendable {
    /// Where the signing keys (a JWKS document) come from.
    public enum KeySource: Sendable, Hashable, CustomStringConvertible {
        /// A JWKS file, read again on every refresh.
        case file(String)
        /// A JWKS URL, fetched with GET.
        case url(URL)

        /// Google's OAuth 2.0 signing keys, which sign Pub/Sub push tokens.
        public static let google = KeySource.url(URL(string: "https://www.googleapis.com/oauth2/v3/certs")!)

        /// The path or URL.
        public var description: String {
            switch self {
            case .file(let path): path
            case .url(let url): url.absoluteString
            }
        }
    }

    /// Reads the JWKS document at a source, at most `maxBytes` of it. Throws on any failure;
    /// the authenticator turns that into `retryable`.
    public typealias Fetch = @Sendable (_ source: KeySource, _ maxBytes: Int) async throws -> [UInt8]

    /// What the authenticator accepts.
    public struct Configuration: Sendable {
        /// The `aud` the push subscription was configured with (by default the push endpoint URL).
        public var audience: String
        /// The service account the push subscription authenticates as (`email`).
        public var serviceAccountEmail: String
        /// Where the signing keys come from.
        public var keySource: KeySource
        /// How far `exp` may lie in the past and `iat` in the future.
        public var clockSkew: Duration = Configuration.defaultClockSkew
        /// `clockSkew` unless configured otherwise.
        public static let defaultClockSkew: Duration = .seconds(60)
        /// The longest `exp - iat` accepted; Google issues one hour.
        public var maxTokenLifetime: Duration = .seconds(3600)
        /// The shortest time between two fetches of the keys that tokens trigger.
        public var minimumRefreshInterval: Duration = .seconds(60)
        /// How long a fetched key set is used before it is fetched again.
        public var keySetLifetime: Duration = .seconds(3600)
        /// The largest token accepted, in bytes; Google's are about 1 KB.
        public var maxTokenBytes = 8 * 1024
        /// The largest key set document read, in bytes.
        public var maxKeySetBytes = JSONWebKeySet.defaultMaxBytes
        /// The most keys a key set document may list.
        public var maxKeys = JSONWebKeySet.defaultMaxKeys

        /// Accepts tokens for `audience` from `serviceAccountEmail`, signed with keys from
        /// `keySource` (Google's by default).
        public init(audience: String, serviceAccountEmail: String, keySource: KeySource = .google) {
            self.audience = audience
            self.serviceAccountEmail = serviceAccountEmail
            self.keySource = keySource
        }
    }

    /// The `iss` values Google's tokens carry.
    public static let issuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]

    /// What this authenticator accepts.
    public let configuration: Configuration
    private let keys: RefreshingKeySet

    /// An authenticator for `configuration`; `fetch` reads the key set (by default from the file
    /// or over HTTPS, see `fetchKeySet`). Nothing is fetched until the first push or
    /// `refreshKeys`. The audience and the service account email must not be empty.
    public init(configuration: Configuration, fetch: Fetch? = nil) {
        precondition(!configuration.audience.isEmpty, "a Pub/Sub push audience must be configured")
        precondition(!configuration.serviceAccountEmail.isEmpty, "a Pub/Sub push service account must be configured")
        self.configuration = configuration
        let fetch = fetch ?? Self.fetchKeySet
        let source = configuration.keySource
        let maxBytes = configuration.maxKeySetBytes
        let maxKeys = configuration.maxKeys
        keys = RefreshingKeySet(
            minimumInterval: configuration.minimumRefreshInterval, lifetime: configuration.keySetLifetime
        ) { () async throws(PubSubPushAuthenticationError) -> JSONWebKeySet in
            let document: [UInt8]
            do {
                document = try await fetch(source, maxBytes)
            } catch let error as PubSubPushAuthenticationError {
                throw error
            } catch {
                throw PubSubPushAuthenticationError(
                    .retryable, "reading the signing keys from \(source) failed: \(error)")
            }
            do throws(CryptoError) {
                return try JSONWebKeySet(json: document, maxBytes: maxBytes, maxKeys: maxKeys)
            } catch {
                throw PubSubPushAuthenticationError(
                    .retryable, "the signing keys from \(source) cannot be used: \(error.message)")
            }
        }
    }

    /// Fetches the signing keys now, whenever they were last fetched (pushes otherwise fetch
    /// them on first use, and again for an unknown `kid`). Throws `retryable` when they cannot
    /// be fetched or read.
    public func refreshKeys(now: Date = Date()) async throws(PubSubPushAuthenticationError) {
        if let failure = await keys.refresh(now: now) { throw failure }
    }

    /// Key set fetches started so far, by pushes or `refreshKeys`.
    public var keySetFetches: Int {
        get async { await keys.fetches }
    }

    /// Authenticates a push by its `Authorization` header value (`Bearer <token>`), at `now`.
    /// Throws `missing` without a header or a bearer token, and as `authenticate(token:now:)`.
    public func authenticate(authorizationHeader: String?, now: Date = Date())
        async
        throws(PubSubPushAuthenticationError) -> PubSubPushToken
    {
        guard let header = authorizationHeader.map({ Self.trimmingSpaces(Substring($0)) }), !header.isEmpty else {
            throw PubSubPushAuthenticationError(.missing, "the push has no Authorization header")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw PubSubPushAuthenticationError(.missing, "the Authorization header carries no Bearer token")
        }
        return try await authenticate(token: String(Self.trimmingSpaces(parts[1])), now: now)
    }

    /// `text` without the spaces and tabs at its ends (HTTP's optional whitespace), read as
    /// bytes: a token is about a kilobyte, and Foundation's trimming bridges it to `NSString`.
    static func trimmingSpaces(_ text: Substring) -> Substring {
        var slice = text
        while let first = slice.utf8.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.utf8.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }

    /// Authenticates a push by its bearer token, at `now`; returns the verified claims. Throws
    /// `PubSubPushAuthenticationError` with the code of the first check that fails (see the
    /// type's overview).
    public func authenticate(token: String, now: Date = Date()) async throws(PubSubPushAuthenticationError)
        -> PubSubPushToken
    {
        guard !token.isEmpty else { throw PubSubPushAuthenticationError(.missing, "the bearer token is empty") }
        guard token.utf8.count <= configuration.maxTokenBytes else {
            throw PubSubPushAuthenticationError(
                .malformed,
                "the token is \(token.utf8.count) bytes, more than the \(configuration.maxTokenBytes) accepted")
        }
        let keyID = try Self.checkHeader(token)
        let jws: CompactJWS
        do {
            jws = try CompactJWS(token)
        } catch {
            throw PubSubPushAuthenticationError(.malformed, "the token is not a compact JWS: \(error.message)")
        }
        let key = try await keys.key(withID: keyID, now: now)
        if let algorithm = key.algorithm, algorithm != "RS256" {
            throw PubSubPushAuthenticationError(
                .unsupportedAlgorithm, "signing key \(Self.quoted(keyID)) is published for \(Self.quoted(algorithm))")
        }
        guard key.publicKey.verifySHA256(signature: jws.signature, message: jws.signingInput) else {
            throw PubSubPushAuthenticationError(
                .badSignature, "the RS256 signature does not verify with signing key \(Self.quoted(keyID))")
        }
        return try checkClaims(jws.payload, keyID: keyID, now: now)
    }

    // MARK: Header

    /// Steps 1 and 2 on the raw token (before its signature segment is required, so that an
    /// unsigned `alg: none` token is refused for its algorithm); returns the `kid`.
    private static func checkHeader(_ token: String) throws(PubSubPushAuthenticationError) -> String {
        let segments = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw PubSubPushAuthenticationError(
                .malformed, "the token is not a JWT: it has \(segments.count) dot-separated segments, not 3")
        }
        guard let bytes = Base64URL.decode(Substring(segments[0])),
            let header = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else {
            throw PubSubPushAuthenticationError(.malformed, "the token header is not a base64url JSON object")
        }
        guard let algorithm = header["alg"] as? String else {
            throw PubSubPushAuthenticationError(.unsupportedAlgorithm, "the token header names no alg")
        }
        guard algorithm == "RS256" else {
            throw PubSubPushAuthenticationError(
                .unsupportedAlgorithm, "alg \(quoted(algorithm)) is not accepted; Pub/Sub push tokens are RS256")
        }
        guard header["crit"] == nil else {
            throw PubSubPushAuthenticationError(.unsupportedAlgorithm, "the token header has crit parameters")
        }
        guard let keyID = header["kid"] as? String, !keyID.isEmpty else {
            throw PubSubPushAuthenticationError(.malformed, "the token header names no kid")
        }
        return keyID
    }

    // MARK: Claims

    /// The claims read from the payload; each is optional so its absence gets its own code.
    private struct Claims: Decodable {
        var iss: String?
        var aud: Audience?
        var email: String?
        var emailVerified: Verified?
        var exp: Double?
        var iat: Double?
        var sub: String?

        enum CodingKeys: String, CodingKey {
            case iss, aud, email
            case emailVerified = "email_verified"
            case exp, iat, sub
        }

        /// `aud`: one string, or (RFC 7519 §4.1.3) an array of them.
        enum Audience: Decodable {
            case one(String)
            case several([String])

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let one = try? container.decode(String.self) {
                    self = .one(one)
                } else {
                    self = .several(try container.decode([String].self))
                }
            }
        }

        /// `email_verified`: a JSON boolean, or the string `"true"`/`"false"` older Google
        /// tokens used.
        struct Verified: Decodable {
            let value: Bool

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let flag = try? container.decode(Bool.self) {
                    value = flag
                } else {
                    value = try container.decode(String.self) == "true"
                }
            }
        }
    }

    /// Step 5.
    private func checkClaims(_ payload: [UInt8], keyID: String, now: Date) throws(PubSubPushAuthenticationError)
        -> PubSubPushToken
    {
        let claims: Claims
        do {
            claims = try JSONDecoder().decode(Claims.self, from: Data(payload))
        } catch let error as DecodingError {
            throw PubSubPushAuthenticationError(
                .malformed, DeveloperNotification.describe(error, what: "the token payload"))
        } catch {
            throw PubSubPushAuthenticationError(.malformed, "the token payload is not JSON")
        }
        guard let issuer = claims.iss else {
            throw PubSubPushAuthenticationError(.wrongIssuer, "the token names no iss")
        }
        guard Self.issuers.contains(issuer) else {
            throw PubSubPushAuthenticationError(
                .wrongIssuer, "iss \(Self.quoted(issuer)) is not Google (https://accounts.google.com)")
        }
        let audiences: [String]
        switch claims.aud {
        case nil: throw PubSubPushAuthenticationError(.wrongAudience, "the token names no aud")
        case .one(let one): audiences = [one]
        case .several(let several): audiences = several
        }
        guard audiences.contains(configuration.audience) else {
            throw PubSubPushAuthenticationError(
                .wrongAudience,
                audiences.count == 1
                    ? "aud \(Self.quoted(audiences[0])) is not the configured \(Self.quoted(configuration.audience))"
                    : "no aud of the token is the configured \(Self.quoted(configuration.audience))")
        }
        guard let expires = claims.exp else { throw PubSubPushAuthenticationError(.malformed, "the token has no exp") }
        guard let issued = claims.iat else { throw PubSubPushAuthenticationError(.malformed, "the token has no iat") }
        let expiresAt = Date(timeIntervalSince1970: expires)
        let issuedAt = Date(timeIntervalSince1970: issued)
        let skew = configuration.clockSkew.timeInterval
        guard now.timeIntervalSince(expiresAt) <= skew else {
            throw PubSubPushAuthenticationError(
                .expired,
                "the token expired at \(Self.format(expiresAt)); it is \(Self.format(now)) "
                    + "(\(Int(skew)) s of clock skew allowed)")
        }
        guard issuedAt.timeIntervalSince(now) <= skew else {
            throw PubSubPushAuthenticationError(
                .notYetValid,
                "the token is issued at \(Self.format(issuedAt)), in the future; it is \(Self.format(now)) "
                    + "(\(Int(skew)) s of clock skew allowed)")
        }
        let lifetime = expires - issued
        guard lifetime > 0, lifetime <= configuration.maxTokenLifetime.timeInterval else {
            throw PubSubPushAuthenticationError(
                .malformed,
                "the token's lifetime (exp - iat) is \(Int(lifetime)) s; accepted are 1 to "
                    + "\(Int(configuration.maxTokenLifetime.timeInterval)) s")
        }
        guard let email = claims.email else {
            throw PubSubPushAuthenticationError(.wrongEmail, "the token names no email")
        }
        guard email.lowercased() == configuration.serviceAccountEmail.lowercased() else {
            throw PubSubPushAuthenticationError(
                .wrongEmail,
                "email \(Self.quoted(email)) is not the configured push service account "
                    + Self.quoted(configuration.serviceAccountEmail))
        }
        guard claims.emailVerified?.value == true else {
            throw PubSubPushAuthenticationError(
                .emailNotVerified,
                claims.emailVerified == nil ? "the token has no email_verified" : "email_verified is not true")
        }
        return PubSubPushToken(
            keyID: keyID, issuer: issuer, audience: configuration.audience, email: email, subject: claims.sub,
            issuedAt: issuedAt,
            expiresAt: expiresAt)
    }

    // MARK: Fetching keys

    /// The default `Fetch`: reads a file (off the cooperative thread pool), or GETs a URL
    /// (HTTPS, or HTTP to a loopback host) with a ten-second timeout, status 200 only. Either way
    /// at most `maxBytes`.
    public static func fetchKeySet(_ source: KeySource, maxBytes: Int) async throws -> [UInt8] {
        switch source {
        case .file(let path):
            let result = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(
                        returning: Result { () throws(PubSubPushAuthenticationError) in
                            try readFile(path, maxBytes: maxBytes)
                        })
                }
            }
            return try result.get()
        case .url(let url):
            let loopback = ["localhost", "127.0.0.1", "::1"].contains(url.host ?? "")
            guard url.scheme == "https" || (url.scheme == "http" && loopback) else {
                throw PubSubPushAuthenticationError(.retryable, "the key set URL \(url) is not HTTPS")
            }
            var request = URLRequest(url: url)
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            // The shared transport: no redirects followed, and no more than `maxBytes` read.
            let transport = HTTPClientTransport(requestTimeout: 10, maxResponseBytes: maxBytes)
            switch await transport.perform(request) {
            case .success(let response) where response.status == 200:
                return [UInt8](response.body)
            case .success(let response):
                throw PubSubPushAuthenticationError(.retryable, "\(url) answered HTTP \(response.status)")
            case .failure(.tooLarge):
                throw PubSubPushAuthenticationError(
                    .retryable, "the key set at \(url) is more than the \(maxBytes) bytes accepted")
            case .failure(let failure):
                throw PubSubPushAuthenticationError(.retryable, "the key set at \(url) cannot be fetched: \(failure)")
            }
        }
    }

    private static func readFile(_ path: String, maxBytes: Int) throws(PubSubPushAuthenticationError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PubSubPushAuthenticationError(.retryable, "the key set file \(path) cannot be opened")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maxBytes + 1) ?? Data()
        } catch {
            throw PubSubPushAuthenticationError(.retryable, "the key set file \(path) cannot be read: \(error)")
        }
        guard data.count <= maxBytes else {
            throw PubSubPushAuthenticationError(
                .retryable, "the key set file \(path) is more than the \(maxBytes) bytes accepted")
        }
        return [UInt8](data)
    }

    // MARK: Messages

    /// `text` for a message: quoted, at most 64 characters, anything but printable ASCII as `?`.
    /// For values read from a token, which an attacker controls.
    static func quoted(_ text: String) -> String {
        let shown = text.unicodeScalars.prefix(64).map {
            $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
        }
        return "\"" + String(shown) + (text.unicodeScalars.count > 64 ? "…" : "") + "\""
    }

    static func format(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
