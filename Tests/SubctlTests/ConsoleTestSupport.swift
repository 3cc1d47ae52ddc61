import Crypto
import HTTP
import Model
import RPC
import Sockets
import Synchronization
import Wire

@testable import SubctlKit

/// A service for the console's tests: answers (or errors) by method name, or by method and
/// request where one is given for that request, and every call it got.
final class ConsoleTransport: BytesTransport {
    let answers: Mutex<[String: Result<[UInt8], SubctlError>]>
    /// Answers for one request of a method (its serialized bytes), before `answers`.
    let requestAnswers = Mutex<[String: [[UInt8]: Result<[UInt8], SubctlError>]]>([:])
    let requests = Mutex<[(method: String, bytes: [UInt8])]>([])

    init(_ answers: [String: Result<[UInt8], SubctlError>] = [:]) { self.answers = Mutex(answers) }

    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        requests.withLock { $0.append((method, request)) }
        guard let answer = requestAnswers.withLock({ $0[method]?[request] }) ?? answers.withLock({ $0[method] }) else {
            throw SubctlError(.rpc(.unimplemented), method)
        }
        return try answer.get()
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        ([], SubctlError(.rpc(.unimplemented), method))
    }

    /// The methods called, in order.
    var methods: [String] { requests.withLock { $0.map(\.method) } }

    /// The last request sent to `method`, decoded.
    func last<Request: ProtoMessage>(_ method: String, as: Request.Type) throws -> Request? {
        guard let bytes = requests.withLock({ $0.last { $0.method == method }?.bytes }) else { return nil }
        return try Request(serialized: bytes)
    }
}

/// A console at 127.0.0.1:8123 over three `ConsoleTransport`s, with known secrets, and the
/// requests a browser would send it.
struct ConsoleFixture {
    static let address = HostPort(host: "127.0.0.1", port: 8123)
    static let host = "127.0.0.1:8123"
    static let token = String(repeating: "ab", count: 32)
    /// 2026-03-01T00:00:00Z.
    static let now: Int64 = 1_772_323_200_000

    let ledger = ConsoleTransport()
    let verifier = ConsoleTransport()
    let entitlement = ConsoleTransport()
    let console: Console

    init(
        readOnly: Bool = false, requireLogin: Bool = true, origin: ConsoleOrigin? = nil,
        appleAnchors: [X509Certificate] = [], now: Int64 = ConsoleFixture.now
    ) {
        console = Console(
            services: Console.Services(ledger: ledger, verifier: verifier, entitlement: entitlement),
            identity: "support-alice", readOnly: readOnly, address: Self.address, requireLogin: requireLogin,
            origin: origin,
            sessions: ConsoleSessions(loginToken: Self.token, csrfKey: Array(repeating: 7, count: 32)),
            appleAnchors: appleAnchors, now: { now })
    }

    /// Every call any service got, as `Service/Method`.
    var calls: [String] {
        (ledger.methods + verifier.methods + entitlement.methods).map { String($0.split(separator: ".").last ?? "") }
    }

    /// A session made by the login address.
    func login() async -> String {
        let response = await get("/login", query: ["token": Self.token], session: nil)
        let cookie = response.header("Set-Cookie") ?? ""
        return String(cookie.prefix { $0 != ";" }.dropFirst("console_session_8123=".count))
    }

    func get(
        _ path: String, query: [String: String] = [:], session: String?, headers: [String: String] = [:]
    ) async -> HTTPResponse {
        var all = ["host": Self.host]
        if let session { all["cookie"] = "other=1; console_session_8123=\(session)" }
        all.merge(headers) { $1 }
        return await console.respond(to: HTTPRequest(method: "GET", path: path, query: query, headers: all))
    }

    /// A POST of `fields`; `csrf` nil sends the session's right token, "" none.
    func post(
        _ path: String, _ fields: [(String, String)], session: String?, csrf: String? = nil,
        headers: [String: String] = [:]
    ) async -> HTTPResponse {
        var all = ["host": Self.host, "content-type": "application/x-www-form-urlencoded"]
        if let session { all["cookie"] = "console_session_8123=\(session)" }
        all.merge(headers) { $1 }
        var pairs = fields.map { (name: $0.0, value: $0.1) }
        let token = csrf ?? session.map { console.sessions.csrfToken(for: $0) } ?? ""
        if !token.isEmpty { pairs.append(("csrf", token)) }
        return await console.respond(
            to: HTTPRequest(
                method: "POST", path: path, headers: all, body: Array(FormFields(pairs).encoded.utf8)))
    }
}

extension HTTPResponse {
    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
}

extension ConsoleTransport {
    func answer(_ method: String, _ message: some ProtoMessage) {
        answers.withLock { $0[method] = .success(message.serialized()) }
    }

    /// Answers `request` to `method` with `message`; other requests get the method's answer.
    func answer(_ method: String, to request: some ProtoMessage, _ message: some ProtoMessage) {
        requestAnswers.withLock { $0[method, default: [:]][request.serialized()] = .success(message.serialized()) }
    }

    func fail(_ method: String, _ error: SubctlError) {
        answers.withLock { $0[method] = .failure(error) }
    }
}
