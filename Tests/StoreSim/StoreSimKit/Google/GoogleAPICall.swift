import Crypto
import Foundation
import HTTP
import Synchronization

/// What the simulated Play Developer APIs (`GoogleSimAPI`, `RecordedGoogleAPI`) share: the
/// service account's token exchange and the access tokens it hands out, the bearer check,
/// injected faults, Google's JSON error answers, path segments, and the Pub/Sub push envelope
/// with its OIDC token.
enum GoogleAPICall {
    /// A failure answered with Google's error body: HTTP status, status name, message.
    enum Failure: Error {
        case google(Int, String, String)
    }

    /// Access tokens handed out, with their expiry (wall-clock seconds).
    final class AccessTokens: Sendable {
        private let tokens = Mutex<[String: Int64]>([:])

        /// A new token valid for an hour from `now` (seconds).
        func issue(now: Int64) -> String {
            let token = "ya29.sim-" + UUID().uuidString.lowercased()
            tokens.withLock { $0[token] = now + 3600 }
            return token
        }

        func isValid(_ token: String, now: Int64) -> Bool { tokens.withLock { $0[token] }.map { $0 > now } ?? false }
    }

    /// The JWT-bearer grant: an RS256 assertion by the service account for the Play scope,
    /// addressed to the token URL, at most an hour long and not expired.
    static func token(
        _ request: HTTPRequest, identity: GoogleSimAPI.Identity, tokens: AccessTokens, now date: Date
    ) -> HTTPResponse {
        let form = form(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"]
        else { return oauthError("unsupported_grant_type", "Invalid grant_type.") }
        guard let jws = try? CompactJWS(assertion),
            let head = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            head["alg"] as? String == "RS256",
            identity.serviceAccountKey.verifySHA256(signature: jws.signature, message: jws.signingInput),
            let claims = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any]
        else { return oauthError("invalid_grant", "Invalid JWT Signature.") }
        let now = Int64(date.timeIntervalSince1970)
        guard claims["iss"] as? String == identity.serviceAccountEmail,
            (claims["scope"] as? String)?.split(separator: " ").contains(Substring(GoogleSimAPI.scope)) == true,
            claims["aud"] as? String == identity.tokenURL,
            let issued = (claims["iat"] as? NSNumber)?.int64Value,
            let expires = (claims["exp"] as? NSNumber)?.int64Value,
            expires > now, issued <= now + 60, expires - issued <= 3600
        else { return oauthError("invalid_grant", "Invalid JWT: the claims are wrong or expired.") }
        let accessToken = tokens.issue(now: now)
        return .json("{\"access_token\":\"\(accessToken)\",\"expires_in\":3599,\"token_type\":\"Bearer\"}")
    }

    /// Answers one API call: 401 without a valid access token, an injected fault when one is
    /// due, otherwise `body`'s JSON (`{}` for nil) or the Google error it threw.
    static func answer(
        _ request: HTTPRequest, tokens: AccessTokens, faults: APIFaults, now: Date, _ body: () throws -> Data?
    ) -> HTTPResponse {
        guard let header = request.headers["authorization"], header.hasPrefix("Bearer "),
            tokens.isValid(String(header.dropFirst("Bearer ".count)), now: Int64(now.timeIntervalSince1970))
        else { return googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.") }
        return faults.answer(path: request.path) { status in
            switch status {
            case 429: googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", retryAfter: 1)
            case 503: googleError(503, "UNAVAILABLE", "The service is currently unavailable.")
            default: googleError(status, "INTERNAL", "Internal error encountered.")
            }
        } _: {
            result(body)
        }
    }

    /// `body`'s JSON as an answer (`{}` for nil), or the Google error it threw.
    private static func result(_ body: () throws -> Data?) -> HTTPResponse {
        do {
            guard let data = try body() else { return HTTPResponse(status: 200, body: Array("{}".utf8)) }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: [UInt8](data))
        } catch Failure.google(let status, let name, let message) {
            return googleError(status, name, message)
        } catch let error as SimError {
            switch error.kind {
            case .notFound: return googleError(404, "NOT_FOUND", "The purchase token was not found.")
            case .badRequest: return googleError(400, "INVALID_ARGUMENT", error.message)
            case .conflict: return googleError(409, "FAILED_PRECONDITION", error.message)
            }
        } catch {
            return googleError(500, "INTERNAL", "Internal error encountered.")
        }
    }

    /// `object` as the JSON bytes of an answer (keys sorted).
    static func json(_ object: [String: any Sendable]?) throws -> Data? {
        try object.map { try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
    }

    /// Google's error body; with `retryAfter`, a `Retry-After` of that many seconds.
    static func googleError(_ status: Int, _ name: String, _ message: String, retryAfter: Int? = nil) -> HTTPResponse {
        var response = HTTPResponse.json(
            "{\"error\":{\"code\":\(status),\"message\":\"\(message)\",\"status\":\"\(name)\"}}", status: status)
        if let retryAfter { response.headers.append(("Retry-After", String(retryAfter))) }
        return response
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

    /// The rest of `path` after `prefix`, percent-decoded; a 404 when empty.
    static func segmentPath(_ path: String, after prefix: String) throws -> String {
        guard let rest = String(path.dropFirst(prefix.count)).removingPercentEncoding, !rest.isEmpty else {
            throw Failure.google(404, "NOT_FOUND", "Not found.")
        }
        return rest
    }

    /// One path segment after `prefix`; a 404 when empty or when more segments follow.
    static func segment(_ path: String, after prefix: String) throws -> String {
        let rest = try segmentPath(path, after: prefix)
        guard !rest.contains("/") else { throw Failure.google(404, "NOT_FOUND", "Not found.") }
        return rest
    }

    /// `{productId}/tokens/{token}:{verb}` after `prefix`, split.
    static func tokenAction(_ path: String, after prefix: String) throws -> (
        product: String, token: String, verb: String
    ) {
        let parts = try segmentPath(path, after: prefix).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1] == "tokens", let colon = parts[2].lastIndex(of: ":") else {
            throw Failure.google(404, "NOT_FOUND", "Not found.")
        }
        return (String(parts[0]), String(parts[2][..<colon]), String(parts[2][colon...].dropFirst()))
    }

    /// `{productId}/tokens/{token}` after `prefix`, split.
    static func productToken(_ path: String, after prefix: String) throws -> (product: String, token: String) {
        let parts = try segmentPath(path, after: prefix).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1] == "tokens", !parts[0].isEmpty, !parts[2].isEmpty else {
            throw Failure.google(404, "NOT_FOUND", "Not found.")
        }
        return (String(parts[0]), String(parts[2]))
    }

    /// The JWKS document of the push signing key.
    static func jwks(_ identity: GoogleSimAPI.Identity) -> [UInt8] {
        let key = try? PublicKey(pem: identity.pushKey.publicKeyPEM())
        return JSONWebKeySet(keys: key.map { [.init(publicKey: $0, keyID: identity.pushKeyID)] } ?? []).json()
    }

    /// A Pub/Sub push body for the notification JSON `notification` with its OIDC bearer token,
    /// signed by the push key at `now`.
    static func push(
        notification: Data, messageID: String, publishTime: Int64, identity: GoogleSimAPI.Identity, now: Date
    ) throws(CryptoError) -> (body: Data, bearer: String) {
        let envelope: [String: any Sendable] = [
            "message": [
                "data": notification.base64EncodedString(), "messageId": messageID,
                "publishTime": GoogleSimStore.rfc3339(publishTime), "attributes": [:] as [String: String],
            ] as [String: any Sendable],
            "subscription": "projects/storesim/subscriptions/play-rtdn",
        ]
        let body = try! JSONSerialization.data(withJSONObject: envelope, options: [.sortedKeys])
        let seconds = Int64(now.timeIntervalSince1970)
        let claims: [String: any Sendable] = [
            "iss": "https://accounts.google.com", "aud": identity.pushAudience, "email": identity.pushServiceAccount,
            "email_verified": true, "iat": seconds, "exp": seconds + 3600, "sub": "110000000000000000000",
        ]
        let header = try! JSONSerialization.data(
            withJSONObject: ["alg": "RS256", "kid": identity.pushKeyID, "typ": "JWT"], options: [.sortedKeys])
        let payload = try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let bearer = try CompactJWS.sign(
            header: [UInt8](header), payload: [UInt8](payload), key: identity.pushKey, algorithm: .rs256)
        return (body, bearer)
    }
}
