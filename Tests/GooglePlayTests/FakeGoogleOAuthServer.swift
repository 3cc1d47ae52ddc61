import Crypto
import Foundation
import HTTP
import Observability
import Synchronization

/// A stand-in for Google's OAuth token endpoint: the real HTTP server on 127.0.0.1 with port 0,
/// answering `POST /token`. It checks every JWT bearer assertion against `AssertionRules` (the
/// RS256 signature with the public half of the test key, then the header and claims) and answers
/// a new access token, or 400 `invalid_grant` naming what was wrong. Scripted failures are
/// answered first, one per exchange.
final class FakeGoogleOAuthServer: Sendable {
    /// What an assertion must satisfy.
    struct AssertionRules: Sendable {
        var clientEmail: String
        var keyID: String
        /// The `aud` claim expected: the service account's `token_uri`.
        var audience: String
        var scope = "https://www.googleapis.com/auth/androidpublisher"
        /// The key whose public half must verify the signature.
        var publicKey: PublicKey
        /// The time the assertion must be valid at.
        var now: @Sendable () -> Date
    }

    /// The header and claims of an accepted assertion.
    struct Assertion: Sendable, Equatable {
        var alg: String
        var typ: String
        var kid: String
        var iss: String
        var scope: String
        var aud: String
        var iat: Int64
        var exp: Int64
    }

    /// One exchange as the server saw it.
    struct Exchange: Sendable {
        let contentType: String?
        let grantType: String?
        /// The raw assertion, to check it never appears in an error.
        let assertionText: String?
        /// The decoded assertion when it passed the rules.
        let assertion: Assertion?
        /// Why the assertion was refused; nil when it passed.
        let refusal: String?
        /// The access token handed out, if any.
        let accessToken: String?
    }

    private struct State {
        var exchanges: [Exchange] = []
        var failures: [HTTPResponse] = []
        var issued = 0
    }

    private let server: HTTPServer
    private let rules: AssertionRules
    private let state = Mutex(State())

    /// The `expires_in` of every token handed out.
    static let expiresIn = 3599

    /// Starts a server that checks assertions against `rules`.
    init(rules: AssertionRules) throws {
        self.rules = rules
        server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "fake-oauth", sink: .capturing()))
        try server.start()
        server.route("POST", "/token") { [weak self] request in
            self?.exchange(request) ?? HTTPResponse(status: 503)
        }
    }

    deinit { server.stop() }

    /// `http://127.0.0.1:<port>/token`.
    var tokenURL: URL { URL(string: "http://127.0.0.1:\(server.port)/token")! }

    /// Every exchange so far, in arrival order.
    var exchanges: [Exchange] { state.withLock { $0.exchanges } }

    /// The access tokens handed out so far, in order.
    var issuedTokens: [String] { exchanges.compactMap(\.accessToken) }

    /// Answers the next exchanges with `responses`, one each, before valid assertions get tokens again.
    func fail(with responses: HTTPResponse...) { state.withLock { $0.failures += responses } }

    /// Stops serving; idempotent.
    func stop() { server.stop() }

    private func exchange(_ request: HTTPRequest) -> HTTPResponse {
        let form = Self.form(request.body)
        let text = form["assertion"]
        var refusal: String?
        var assertion: Assertion?
        if form["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
            refusal = "wrong grant_type"
        } else if let text {
            switch Self.check(text, rules: rules) {
            case .success(let accepted): assertion = accepted
            case .failure(let why): refusal = why.reason
            }
        } else {
            refusal = "no assertion"
        }
        return state.withLock { state in
            var token: String?
            let response: HTTPResponse
            if !state.failures.isEmpty {
                response = state.failures.removeFirst()
            } else if let refusal {
                response = .json(
                    #"{"error":"invalid_grant","error_description":"\#(refusal)"}"#, status: 400)
            } else {
                state.issued += 1
                let issued = "ya29.fake-access-token-\(state.issued)"
                token = issued
                response = .json(
                    #"{"access_token":"\#(issued)","expires_in":\#(Self.expiresIn),"token_type":"Bearer"}"#)
            }
            state.exchanges.append(
                Exchange(
                    contentType: request.headers["content-type"], grantType: form["grant_type"], assertionText: text,
                    assertion: assertion, refusal: refusal, accessToken: token))
            return response
        }
    }

    /// Why an assertion was refused.
    struct Refusal: Error {
        let reason: String
    }

    /// The assertion's header and claims when it satisfies `rules`.
    static func check(_ text: String, rules: AssertionRules) -> Result<Assertion, Refusal> {
        func refuse(_ reason: String) -> Result<Assertion, Refusal> { .failure(Refusal(reason: reason)) }
        guard let jws = try? CompactJWS(text) else { return refuse("not a compact JWS") }
        guard rules.publicKey.verifySHA256(signature: jws.signature, message: jws.signingInput) else {
            return refuse("Invalid JWT Signature.")
        }
        guard let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any],
            let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value
        else { return refuse("header or claims unreadable") }
        let assertion = Assertion(
            alg: header["alg"] as? String ?? "", typ: header["typ"] as? String ?? "",
            kid: header["kid"] as? String ?? "", iss: claims["iss"] as? String ?? "",
            scope: claims["scope"] as? String ?? "", aud: claims["aud"] as? String ?? "", iat: iat, exp: exp)
        guard assertion.alg == "RS256", assertion.typ == "JWT" else { return refuse("not an RS256 JWT") }
        guard assertion.kid == rules.keyID else { return refuse("unknown kid") }
        guard assertion.iss == rules.clientEmail else { return refuse("wrong iss") }
        guard assertion.scope == rules.scope else { return refuse("wrong scope") }
        guard assertion.aud == rules.audience else { return refuse("wrong aud") }
        guard exp > iat, exp - iat <= 3600 else { return refuse("exp - iat is not in 1...3600") }
        let now = Int64(rules.now().timeIntervalSince1970)
        guard iat <= now, exp > now else { return refuse("not valid now") }
        return .success(assertion)
    }

    /// An `application/x-www-form-urlencoded` body as names and values.
    static func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
