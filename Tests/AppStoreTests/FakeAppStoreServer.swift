import Crypto
import Foundation
import HTTP
import Observability
import Synchronization

/// A stand-in for one App Store Server API environment: the real HTTP server on 127.0.0.1 with
/// port 0, answering scripted responses on exact paths. Every request is recorded, and every
/// request whose bearer JWT does not pass `TokenRules` is answered 401 without reaching a script.
final class FakeAppStoreServer: Sendable {
    /// What a request's bearer token must satisfy.
    struct TokenRules: Sendable {
        var keyID: String
        var issuerID: String
        var bundleID: String
        /// The key whose public half must verify the ES256 signature.
        var publicKey: PublicKey
        /// The time `exp` must still be ahead of.
        var now: @Sendable () -> Date
    }

    /// One request as the server saw it.
    struct Recorded: Sendable {
        let method: String
        let path: String
        let query: [String: String]
        let headers: [String: String]
        let body: [UInt8]
        /// The bearer token, when the request carried one.
        let token: String?
        /// Why the token was refused; nil when it passed.
        let refusal: String?

        /// The body decoded as JSON of type `T`, or nil.
        func body<T: Decodable>(as type: T.Type) -> T? { try? JSONDecoder().decode(type, from: Data(body)) }
    }

    private let server: HTTPServer
    private let rules: TokenRules
    private let recorded = Mutex<[Recorded]>([])
    private let scripts = Mutex<[String: [HTTPResponse]]>([:])

    /// Starts a server that checks tokens against `rules`.
    init(rules: TokenRules) throws {
        self.rules = rules
        server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "fake-app-store", sink: .capturing()))
        try server.start()
    }

    deinit { server.stop() }

    /// `http://127.0.0.1:<port>`.
    var baseURL: URL { URL(string: "http://127.0.0.1:\(server.port)")! }

    /// Every request so far, in arrival order.
    var requests: [Recorded] { recorded.withLock { $0 } }

    /// Answers `method` on `path` with `responses` in turn; the last one repeats.
    func answer(_ method: String, _ path: String, _ responses: HTTPResponse...) {
        let key = method + " " + path
        scripts.withLock { $0[key] = responses }
        answer(method, path) { [weak self] _ in
            self?.scripts.withLock { scripts in
                scripts[key]!.count > 1 ? scripts[key]!.removeFirst() : scripts[key]![0]
            } ?? HTTPResponse(status: 503)
        }
    }

    /// Answers `method` on `path` with what `respond` makes of each authorized request.
    func answer(_ method: String, _ path: String, respond: @escaping @Sendable (Recorded) -> HTTPResponse) {
        // Weak: the server's route table, which this closure lives in, is owned by `self`.
        server.route(method, path) { [weak self, rules] request in
            let token = request.headers["authorization"].flatMap { header in
                header.hasPrefix("Bearer ") ? String(header.dropFirst("Bearer ".count)) : nil
            }
            let refusal = token.map { Self.refusal(of: $0, rules: rules) } ?? "no bearer token"
            let entry = Recorded(
                method: request.method, path: request.path, query: request.query, headers: request.headers,
                body: request.body, token: token, refusal: refusal)
            self?.recorded.withLock { $0.append(entry) }
            return refusal == nil ? respond(entry) : HTTPResponse(status: 401)
        }
    }

    /// Stops serving; idempotent.
    func stop() { server.stop() }

    /// Why `token` is not a valid App Store Server API token under `rules`, or nil.
    static func refusal(of token: String, rules: TokenRules) -> String? {
        guard let jws = try? CompactJWS(token) else { return "not a compact JWS" }
        guard let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any]
        else { return "header or claims are not JSON objects" }
        guard header["alg"] as? String == "ES256" else { return "alg is not ES256" }
        guard header["typ"] as? String == "JWT" else { return "typ is not JWT" }
        guard header["kid"] as? String == rules.keyID else { return "wrong kid" }
        guard claims["iss"] as? String == rules.issuerID else { return "wrong iss" }
        guard claims["aud"] as? String == "appstoreconnect-v1" else { return "wrong aud" }
        guard claims["bid"] as? String == rules.bundleID else { return "wrong bid" }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value
        else { return "iat or exp missing" }
        guard exp > iat, exp - iat <= 3600 else { return "exp - iat is not in 1...3600" }
        let now = Int64(rules.now().timeIntervalSince1970)
        guard iat <= now, exp > now else { return "not valid now" }
        guard jws.signature.count == 64,
            let der = try? ECDSASignature.der(fromRaw: jws.signature, coordinateBytes: 32),
            rules.publicKey.verifySHA256(signature: der, message: jws.signingInput)
        else { return "bad signature" }
        return nil
    }
}
