public import Crypto
public import Foundation
public import HTTP
import Synchronization

/// Google's side of the wire for a `GoogleSimStore`: the OAuth token endpoint that takes a
/// service account's RS256 assertion, the Play Developer API endpoints the verifier calls behind
/// the access tokens it hands out, the JWKS of the key that signs Pub/Sub push tokens, and the
/// push tokens themselves.
public final class GoogleSimAPI: Sendable {
    /// The service account the verifier authenticates as, and the push identity.
    public struct Identity: Sendable {
        public let serviceAccountEmail: String
        public let serviceAccountKey: PublicKey
        /// The `aud` of assertions: the token URL as the service account file names it.
        public let tokenURL: String
        public let pushServiceAccount: String
        public let pushAudience: String
        public let pushKey: PrivateKey
        public let pushKeyID: String

        public init(
            serviceAccountEmail: String, serviceAccountKey: PublicKey, tokenURL: String, pushServiceAccount: String,
            pushAudience: String, pushKey: PrivateKey, pushKeyID: String
        ) {
            self.serviceAccountEmail = serviceAccountEmail
            self.serviceAccountKey = serviceAccountKey
            self.tokenURL = tokenURL
            self.pushServiceAccount = pushServiceAccount
            self.pushAudience = pushAudience
            self.pushKey = pushKey
            self.pushKeyID = pushKeyID
        }
    }

    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    public let store: GoogleSimStore
    public let identity: Identity
    /// Failures to answer instead, for a while.
    public let faults = APIFaults()
    private let wallClock: @Sendable () -> Date
    /// Access tokens handed out, with their expiry (wall-clock seconds).
    private let accessTokens = Mutex<[String: Int64]>([:])

    public init(store: GoogleSimStore, identity: Identity, wallClock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.identity = identity
        self.wallClock = wallClock
    }

    /// The JWKS document of the push signing key.
    public var jwks: [UInt8] {
        let key = try? PublicKey(pem: identity.pushKey.publicKeyPEM())
        return JSONWebKeySet(keys: key.map { [.init(publicKey: $0, keyID: identity.pushKeyID)] } ?? []).json()
    }

    public func register(on server: HTTPServer) {
        server.route("POST", "/token") { [self] request in token(request) }
        server.route("GET", "/google/jwks") { [self] _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: jwks)
        }
        let application = "/androidpublisher/v3/applications/\(store.configuration.packageName)/purchases"
        server.route("GET", "\(application)/subscriptionsv2/tokens/*") { [self] request in
            authorized(request) {
                let token = try segment(request.path, after: "\(application)/subscriptionsv2/tokens/")
                return try store.subscriptionV2(token)
            }
        }
        server.route("POST", "\(application)/subscriptions/*") { [self] request in
            authorized(request) {
                // {subscriptionId}/tokens/{token}:acknowledge
                let rest = try segmentPath(request.path, after: "\(application)/subscriptions/")
                let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 3, parts[1] == "tokens", parts[2].hasSuffix(":acknowledge") else {
                    throw Failure.google(404, "NOT_FOUND", "Not found.")
                }
                try store.acknowledge(String(parts[2].dropLast(":acknowledge".count)), productID: String(parts[0]))
                return nil
            }
        }
        server.route("GET", "\(application)/voidedpurchases") { [self] request in
            authorized(request) { try voided(request) }
        }
    }

    /// A Pub/Sub push body and its OIDC bearer token for a message of the store.
    public func push(_ message: GoogleSimStore.Message) throws(CryptoError) -> (body: Data, bearer: String) {
        let envelope: [String: any Sendable] = [
            "message": [
                "data": message.notification.base64EncodedString(), "messageId": message.id,
                "publishTime": GoogleSimStore.rfc3339(message.eventTime), "attributes": [:] as [String: String],
            ] as [String: any Sendable],
            "subscription": "projects/storesim/subscriptions/play-rtdn",
        ]
        let body = try! JSONSerialization.data(withJSONObject: envelope, options: [.sortedKeys])
        let now = Int64(wallClock().timeIntervalSince1970)
        let claims: [String: any Sendable] = [
            "iss": "https://accounts.google.com", "aud": identity.pushAudience, "email": identity.pushServiceAccount,
            "email_verified": true, "iat": now, "exp": now + 3600, "sub": "110000000000000000000",
        ]
        let header = try! JSONSerialization.data(
            withJSONObject: ["alg": "RS256", "kid": identity.pushKeyID, "typ": "JWT"], options: [.sortedKeys])
        let payload = try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let bearer = try CompactJWS.sign(
            header: [UInt8](header), payload: [UInt8](payload), key: identity.pushKey, algorithm: .rs256)
        return (body, bearer)
    }

    // MARK: OAuth

    /// The JWT-bearer grant: an RS256 assertion by the service account for the Play scope,
    /// addressed to the token URL, at most an hour long and not expired.
    private func token(_ request: HTTPRequest) -> HTTPResponse {
        let form = Self.form(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"]
        else { return Self.oauthError("unsupported_grant_type", "Invalid grant_type.") }
        guard let jws = try? CompactJWS(assertion),
            let head = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            head["alg"] as? String == "RS256",
            identity.serviceAccountKey.verifySHA256(signature: jws.signature, message: jws.signingInput),
            let claims = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any]
        else { return Self.oauthError("invalid_grant", "Invalid JWT Signature.") }
        let now = Int64(wallClock().timeIntervalSince1970)
        guard claims["iss"] as? String == identity.serviceAccountEmail,
            (claims["scope"] as? String)?.split(separator: " ").contains(Substring(Self.scope)) == true,
            claims["aud"] as? String == identity.tokenURL,
            let issued = (claims["iat"] as? NSNumber)?.int64Value,
            let expires = (claims["exp"] as? NSNumber)?.int64Value,
            expires > now, issued <= now + 60, expires - issued <= 3600
        else { return Self.oauthError("invalid_grant", "Invalid JWT: the claims are wrong or expired.") }
        let accessToken = "ya29.sim-" + UUID().uuidString.lowercased()
        accessTokens.withLock { $0[accessToken] = now + 3600 }
        return .json("{\"access_token\":\"\(accessToken)\",\"expires_in\":3599,\"token_type\":\"Bearer\"}")
    }

    static func oauthError(_ error: String, _ description: String) -> HTTPResponse {
        .json("{\"error\":\"\(error)\",\"error_description\":\"\(description)\"}", status: 400)
    }

    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    // MARK: Play Developer API

    enum Failure: Error {
        case google(Int, String, String)
    }

    private func authorized(_ request: HTTPRequest, _ body: () throws -> [String: any Sendable]?) -> HTTPResponse {
        let now = Int64(wallClock().timeIntervalSince1970)
        guard let header = request.headers["authorization"], header.hasPrefix("Bearer "),
            let expires = accessTokens.withLock({ $0[String(header.dropFirst("Bearer ".count))] }), expires > now
        else {
            return Self.googleError(
                401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        }
        if let status = faults.take() {
            switch status {
            case 429: return Self.googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded.")
            case 503: return Self.googleError(503, "UNAVAILABLE", "The service is currently unavailable.")
            default: return Self.googleError(status, "INTERNAL", "Internal error encountered.")
            }
        }
        do {
            guard let object = try body() else { return HTTPResponse(status: 200, body: Array("{}".utf8)) }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: [UInt8](data))
        } catch Failure.google(let status, let name, let message) {
            return Self.googleError(status, name, message)
        } catch let error as SimError {
            switch error.kind {
            case .notFound: return Self.googleError(404, "NOT_FOUND", "The purchase token was not found.")
            case .badRequest: return Self.googleError(400, "INVALID_ARGUMENT", error.message)
            case .conflict: return Self.googleError(409, "FAILED_PRECONDITION", error.message)
            }
        } catch {
            return Self.googleError(500, "INTERNAL", "Internal error encountered.")
        }
    }

    static func googleError(_ status: Int, _ name: String, _ message: String) -> HTTPResponse {
        .json("{\"error\":{\"code\":\(status),\"message\":\"\(message)\",\"status\":\"\(name)\"}}", status: status)
    }

    private func segmentPath(_ path: String, after prefix: String) throws -> String {
        guard let rest = String(path.dropFirst(prefix.count)).removingPercentEncoding, !rest.isEmpty else {
            throw Failure.google(404, "NOT_FOUND", "Not found.")
        }
        return rest
    }

    private func segment(_ path: String, after prefix: String) throws -> String {
        let rest = try segmentPath(path, after: prefix)
        guard !rest.contains("/") else { throw Failure.google(404, "NOT_FOUND", "Not found.") }
        return rest
    }

    /// Voided purchases in [startTime, endTime) (epoch ms; default the last 30 days), `maxResults`
    /// a page (at most 1000) behind `token`; subscriptions only with `type=1`.
    private func voided(_ request: HTTPRequest) throws -> [String: any Sendable] {
        let now = store.clock.now
        let start = request.query["startTime"].flatMap { Int64($0) } ?? now - 30 * 86_400_000
        let end = request.query["endTime"].flatMap { Int64($0) } ?? now
        let size = min(1000, max(1, request.query["maxResults"].flatMap { Int($0) } ?? 1000))
        // Without type=1 Google lists voided in-app products only; every void here is a
        // subscription's.
        let all = request.query["type"] == "1" ? store.voided(from: start, to: end) : []
        let offset = request.query["token"].map { Int($0) ?? -1 } ?? 0
        guard (0...all.count).contains(offset) else {
            throw Failure.google(400, "INVALID_ARGUMENT", "Invalid pagination token.")
        }
        let next = min(all.count, offset + size)
        var answer: [String: any Sendable] = [
            "voidedPurchases": all[offset..<next].map {
                [
                    "kind": "androidpublisher#voidedPurchase", "purchaseToken": $0.token,
                    "purchaseTimeMillis": String($0.purchaseTime), "voidedTimeMillis": String($0.voidedTime),
                    "orderId": $0.orderID, "voidedSource": 2, "voidedReason": 0,
                ] as [String: any Sendable]
            }
        ]
        if next < all.count {
            answer["tokenPagination"] = ["nextPageToken": String(next)] as [String: any Sendable]
        }
        return answer
    }
}
