import Foundation
import HTTP
import Observability
import Synchronization

/// A stand-in for the Google Play Developer API: the real HTTP server on 127.0.0.1 with port 0,
/// answering scripted responses on exact (percent-decoded) paths. Every request is recorded;
/// one whose bearer token `accepts` refuses is answered 401 without reaching a script.
final class FakePlayDeveloperAPI: Sendable {
    /// One request as the server saw it.
    struct Recorded: Sendable {
        let method: String
        let path: String
        let query: [String: String]
        let headers: [String: String]
        let body: [UInt8]
        /// The bearer token, when the request carried one.
        let token: String?
        /// Whether the token was accepted.
        let authorized: Bool
    }

    private let server: HTTPServer
    private let accepts: @Sendable (String) -> Bool
    private let recorded = Mutex<[Recorded]>([])
    private let scripts = Mutex<[String: [HTTPResponse]]>([:])
    private let refused = Mutex<Set<String>>([])

    /// Starts a server that accepts the bearer tokens `accepts` approves of (and `refuse` has not
    /// withdrawn).
    init(accepts: @escaping @Sendable (String) -> Bool) throws {
        self.accepts = accepts
        server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "fake-play", sink: .capturing()))
        try server.start()
    }

    deinit { server.stop() }

    /// `http://127.0.0.1:<port>`.
    var baseURL: URL { URL(string: "http://127.0.0.1:\(server.port)")! }

    /// Every request so far, in arrival order.
    var requests: [Recorded] { recorded.withLock { $0 } }

    /// Makes `token` be answered 401 from now on (as Google does for a revoked or expired token).
    func refuse(_ token: String) { _ = refused.withLock { $0.insert(token) } }

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
        server.route(method, path) { [weak self] request in
            guard let self else { return HTTPResponse(status: 503) }
            let token = request.headers["authorization"].flatMap { header in
                header.hasPrefix("Bearer ") ? String(header.dropFirst("Bearer ".count)) : nil
            }
            let authorized = token.map { token in accepts(token) && !refused.withLock { $0.contains(token) } } ?? false
            let entry = Recorded(
                method: request.method, path: request.path, query: request.query, headers: request.headers,
                body: request.body, token: token, authorized: authorized)
            recorded.withLock { $0.append(entry) }
            guard authorized else {
                return .json(
                    #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#,
                    status: 401)
            }
            return respond(entry)
        }
    }

    /// Stops serving; idempotent.
    func stop() { server.stop() }

    /// Google's error body.
    static func error(_ status: Int, _ message: String, _ code: String) -> HTTPResponse {
        .json(#"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(code)"}}"#, status: status)
    }
}
