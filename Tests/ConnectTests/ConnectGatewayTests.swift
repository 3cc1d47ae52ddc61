import Connect
import Foundation
import FoundationNetworking
import HTTP
import Observability
import RPC
import TestSupport
import Testing
import Wire

/// An RPC server with entitlement methods of every handler kind, its HTTP listener with the
/// Connect gateway; calls go through a real HTTP client (URLSession, `connectCall`).
final class GatewayFixture: Sendable {
    let server: RPCServer
    let http: HTTPServer
    /// One element each time `ReloadPolicy`'s task is cancelled.
    let cancellations: AsyncStream<Void>

    /// `CheckAccess` (inline): account `a` is allowed until 5; `code-N` fails with status N.
    /// `ListEntitlements` (a task) and `CheckAccessBatch` (deferred) answer at once;
    /// `ReloadPolicy` (a task) waits until it is cancelled.
    init(
        configuration: RPCServerConfiguration = RPCServerConfiguration(),
        identify: @escaping @Sendable (HTTPRequest) -> Result<[String]?, RPCError> = { _ in .success(nil) }
    ) throws {
        let router = RPCRouter()
        router.inline(EntitlementRPC.checkAccess, limits: RPCMethodLimits(maxRequestBytes: 64)) {
            (request: CheckAccessRequest) throws -> CheckAccessResponse in
            if request.accountID.hasPrefix("code-"), let number = Int32(request.accountID.dropFirst(5)) {
                throw RPCError(StatusCode(rawValue: number), "asked for code \(number)")
            }
            return CheckAccessResponse(
                allowed: request.accountID == "a", untilMilliseconds: request.accountID == "a" ? 5 : nil,
                reason: request.accountID == "a" ? .granted : .noGrant)
        }
        router.unary(EntitlementRPC.listEntitlements) { _, request in
            ListEntitlementsResponse(entitlements: [
                EntitlementEntry(capability: request.accountID + "-pro", grants: [])
            ])
        }
        router.deferred(EntitlementRPC.checkAccessBatch) { _, request, respond in
            // A thread of its own, like a storage writer's (not a pool other tests may be blocking).
            Thread {
                respond(.success(CheckAccessBatchResponse(results: request.checks.map { _ in CheckAccessResponse() })))
            }.start()
        }
        let (cancellations, cancelled) = AsyncStream.makeStream(of: Void.self)
        self.cancellations = cancellations
        router.unary(EntitlementRPC.reloadPolicy) { _, _ in
            do {
                // Until cancelled: a clock nobody moves.
                try await ManualClock().sleep(for: .seconds(3600))
            } catch {
                cancelled.yield()
                throw error
            }
            return ReloadPolicyResponse()
        }
        server = try RPCServer(configuration: configuration, router: router)
        try server.start()
        http = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "test", sink: .capturing()))
        ConnectGateway(server: server, identify: identify).install(on: http)
        try http.start()
    }

    /// POSTs `body` to the method's path with `headers` (`Content-Type` among them).
    func post(_ method: String, _ body: [UInt8], headers: [String: String]) async throws -> ConnectAnswer {
        var headers = headers
        let contentType = headers.removeValue(forKey: "Content-Type") ?? ""
        return try await connectCall(
            port: http.port, method: method, body: body, contentType: contentType, headers: headers)
    }

    func postJSON(_ method: String, _ json: String, headers: [String: String] = [:]) async throws -> ConnectAnswer {
        try await post(method, Array(json.utf8), headers: ["Content-Type": "application/json"].merging(headers) { $1 })
    }

    deinit { http.stop() }
}

@Suite("Connect unary calls over HTTP")
struct ConnectGatewayTests {
    @Test("JSON in, JSON out, for inline, task and deferred methods")
    func json() async throws {
        let fixture = try GatewayFixture()
        let allowed = try await fixture.postJSON(
            EntitlementRPC.checkAccess.name, #"{"accountId": "a", "capability": "pro"}"#,
            headers: ["Connect-Protocol-Version": "1"])
        #expect(allowed.status == 200)
        #expect(allowed.headers["content-type"] == "application/json")
        #expect(allowed.text == #"{"allowed":true,"untilMs":"5","reason":"ACCESS_REASON_GRANTED"}"#)
        let listed = try await fixture.postJSON(EntitlementRPC.listEntitlements.name, #"{"account_id": "b"}"#)
        #expect(listed.text == #"{"entitlements":[{"capability":"b-pro","grants":[]}]}"#)
        let batch = try await fixture.postJSON(
            EntitlementRPC.checkAccessBatch.name, #"{"checks": [{"accountId": "x"}, {"accountId": "y"}]}"#)
        #expect(batch.status == 200)
        #expect(batch.text == #"{"results":[{"allowed":false},{"allowed":false}]}"#)
        // An empty body is the empty message; an answer's bools and lists are there when unset.
        let empty = try await fixture.postJSON(EntitlementRPC.checkAccess.name, "")
        #expect(empty.text == #"{"allowed":false,"reason":"ACCESS_REASON_NO_GRANT"}"#)
        await fixture.server.shutdown()
    }

    @Test("binary protobuf in, the same bytes out as the framed protocol gives")
    func proto() async throws {
        let fixture = try GatewayFixture()
        let request = CheckAccessRequest(accountID: "a", capability: "pro").serialized()
        let answer = try await fixture.post(
            EntitlementRPC.checkAccess.name, request, headers: ["Content-Type": "application/proto"])
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "application/proto")
        #expect(
            [UInt8](answer.body)
                == CheckAccessResponse(allowed: true, untilMilliseconds: 5, reason: .granted).serialized())
        await fixture.server.shutdown()
    }

    @Test(
        "every status code is Connect's name and HTTP status in a JSON error body",
        arguments: [
            (1, "canceled", 499), (2, "unknown", 500), (3, "invalid_argument", 400), (4, "deadline_exceeded", 504),
            (5, "not_found", 404), (6, "already_exists", 409), (7, "permission_denied", 403),
            (8, "resource_exhausted", 429), (9, "failed_precondition", 400), (10, "aborted", 409),
            (11, "out_of_range", 400), (12, "unimplemented", 501), (13, "internal", 500), (14, "unavailable", 503),
            (15, "data_loss", 500), (16, "unauthenticated", 401), (99, "unknown", 500),
        ])
    func errorCodes(number: Int32, name: String, status: Int) async throws {
        let fixture = try GatewayFixture()
        for codec in ["application/json", "application/proto"] {
            let body =
                codec == "application/json"
                ? Array(#"{"accountId": "code-\#(number)"}"#.utf8)
                : CheckAccessRequest(accountID: "code-\(number)", capability: "").serialized()
            let answer = try await fixture.post(EntitlementRPC.checkAccess.name, body, headers: ["Content-Type": codec])
            #expect(answer.status == status)
            #expect(answer.headers["content-type"] == "application/json")
            #expect(answer.text == #"{"code":"\#(name)","message":"asked for code \#(number)"}"#)
        }
        await fixture.server.shutdown()
    }

    @Test(
        "Content-Type's media type counts in any case, without its parameters and the blanks around it",
        arguments: [
            ("application/json", 200), ("Application/JSON; charset=utf-8", 200), (" \tapplication/json \t;q=1", 200),
            (";application/json", 200), ("application/json;", 200), ("APPLICATION/PROTO", 200),
            ("application/jsonx", 415), ("application/ json", 415), (";", 415), (" ", 415), ("json", 415),
        ])
    func contentTypes(contentType: String, status: Int) async throws {
        let fixture = try GatewayFixture()
        let body: [UInt8] =
            contentType.lowercased().contains("proto")
            ? CheckAccessRequest(accountID: "a", capability: "pro").serialized()
            : Array(#"{"accountId": "a", "capability": "pro"}"#.utf8)
        let answer = try await fixture.post(
            EntitlementRPC.checkAccess.name, body, headers: ["Content-Type": contentType])
        #expect(answer.status == status)
        await fixture.server.shutdown()
    }

    @Test("what the gateway refuses before the call, each with its reason")
    func refusals() async throws {
        let fixture = try GatewayFixture()
        let method = EntitlementRPC.checkAccess.name
        let plain = try await fixture.post(method, [], headers: ["Content-Type": "text/plain"])
        #expect(plain.status == 415)
        #expect(plain.headers["accept-post"] == "application/json, application/proto")
        let cases: [(headers: [String: String], body: String, status: Int, text: String)] = [
            (
                ["Connect-Protocol-Version": "2"], "{}", 400,
                #"{"code":"invalid_argument","message":"Connect-Protocol-Version \"2\" is not supported: send 1"}"#
            ),
            (
                ["Connect-Timeout-Ms": "12345678901"], "{}", 400,
                #"{"code":"invalid_argument","message":"Connect-Timeout-Ms must be 1 to 10 digits, got \"12345678901\""}"#
            ),
            (
                ["Connect-Timeout-Ms": "-5"], "{}", 400,
                #"{"code":"invalid_argument","message":"Connect-Timeout-Ms must be 1 to 10 digits, got \"-5\""}"#
            ),
            (
                ["Content-Encoding": "br"], "{}", 501,
                #"{"code":"unimplemented","message":"Content-Encoding \"br\" is not supported: send gzip or identity"}"#
            ),
            (
                ["Content-Encoding": "gzip"], "{}", 400,
                #"{"code":"invalid_argument","message":"the body is not valid gzip: zlib error -3"}"#
            ),
            (
                [:], #"{"accountId": 5}"#, 400,
                #"{"code":"invalid_argument","message":"subscriptions.entitlement.v1.CheckAccessRequest.account_id: expected a string, got 5"}"#
            ),
            (
                [:], #"{"nope": 1}"#, 400,
                #"{"code":"invalid_argument","message":"subscriptions.entitlement.v1.CheckAccessRequest has no field \"nope\""}"#
            ),
            (
                [:], #"{"accountId": "\#(String(repeating: "x", count: 80))"}"#, 429,
                #"{"code":"resource_exhausted","message":"a request of 82 bytes for subscriptions.entitlement.v1.Entitlement/CheckAccess exceeds its limit of 64 bytes"}"#
            ),
        ]
        for item in cases {
            let answer = try await fixture.postJSON(method, item.body, headers: item.headers)
            #expect(answer.status == item.status, "\(item.headers) \(item.body)")
            #expect(answer.text == item.text)
        }
        // A body of nothing but nesting costs a scan, not a thread's stack.
        let deep = try await fixture.postJSON(method, #"{"accountId": "# + String(repeating: "[", count: 200_000))
        #expect(deep.status == 400)
        #expect(
            deep.text
                == #"{"code":"invalid_argument","message":"the request nests arrays and objects deeper than 32 levels"}"#
        )
        let brotli = try await fixture.postJSON(method, "{}", headers: ["Content-Encoding": "br"])
        #expect(brotli.headers["accept-encoding"] == "gzip, identity")
        let bytes = try await fixture.post(method, [0x0A, 0x05, 0x61], headers: ["Content-Type": "application/proto"])
        #expect(bytes.status == 400)
        #expect(
            bytes.text
                == #"{"code":"invalid_argument","message":"payload is not a valid subscriptions.entitlement.v1.CheckAccessRequest: field 1 at byte 0 declares 5 bytes but 1 remain"}"#
        )
        // A server stream has no Connect route here, and neither has a method the server lacks.
        #expect(try await fixture.postJSON("subscriptions.ledger.v1.Ledger/WatchChanges", "{}").status == 404)
        #expect(try await fixture.postJSON("subscriptions.entitlement.v1.Entitlement/Health", "{}").status == 404)
        await fixture.server.shutdown()
    }

    /// `bytes` compressed by the gzip command.
    static func gzip(_ bytes: [UInt8]) async throws -> [UInt8] {
        [UInt8](try await runCommand(URL(fileURLWithPath: "/bin/gzip"), ["-c"], input: Data(bytes)).outputBytes)
    }

    @Test("a gzip body is inflated, within the listener's body limit")
    func gzipBodies() async throws {
        let fixture = try GatewayFixture()
        let method = EntitlementRPC.checkAccess.name
        let json = try await fixture.post(
            method, try await Self.gzip(Array(#"{"accountId": "a"}"#.utf8)),
            headers: ["Content-Type": "application/json", "Content-Encoding": "gzip"])
        #expect(json.status == 200)
        #expect(json.text == #"{"allowed":true,"untilMs":"5","reason":"ACCESS_REASON_GRANTED"}"#)
        let proto = try await fixture.post(
            method, try await Self.gzip(CheckAccessRequest(accountID: "a", capability: "").serialized()),
            headers: ["Content-Type": "application/proto", "Content-Encoding": "gzip"])
        #expect(
            [UInt8](proto.body)
                == CheckAccessResponse(allowed: true, untilMilliseconds: 5, reason: .granted).serialized())
        // 2 MiB of spaces in about 2 KiB: refused once it passes 1 MiB, not inflated whole.
        let bomb = try await Self.gzip(Array("{".utf8) + [UInt8](repeating: 0x20, count: 2 << 20) + Array("}".utf8))
        #expect(bomb.count < 4096)
        let refused = try await fixture.post(
            method, bomb, headers: ["Content-Type": "application/json", "Content-Encoding": "gzip"])
        #expect(refused.status == 429)
        #expect(
            refused.text
                == #"{"code":"resource_exhausted","message":"the gzip body inflates to more than 1048576 bytes"}"#)
        let truncated = try await fixture.post(
            method, Array(try await Self.gzip(Array("{}".utf8)).dropLast(4)),
            headers: ["Content-Type": "application/json", "Content-Encoding": "gzip"])
        #expect(truncated.text == #"{"code":"invalid_argument","message":"the body is not valid gzip: it ends early"}"#)
        await fixture.server.shutdown()
        // A caller the gateway does not know gets its refusal before any of its body is inflated.
        let guarded = try GatewayFixture(identify: { _ in .failure(RPCError(.unauthenticated, "no API key")) })
        let unknown = try await guarded.post(
            method, bomb, headers: ["Content-Type": "application/json", "Content-Encoding": "gzip"])
        #expect(unknown.status == 401)
        #expect(unknown.text == #"{"code":"unauthenticated","message":"no API key"}"#)
        await guarded.server.shutdown()
    }

    @Test(
        "Connect-Timeout-Ms is the call's deadline: a call past it is deadline_exceeded and cancelled",
        .timeLimit(.minutes(5)))
    func timeout() async throws {
        let fixture = try GatewayFixture()
        let answer = try await fixture.postJSON(
            EntitlementRPC.reloadPolicy.name, "{}", headers: ["Connect-Timeout-Ms": "50"])
        #expect(answer.status == 504)
        #expect(answer.text == #"{"code":"deadline_exceeded","message":"deadline of 50 ms exceeded"}"#)
        // The handler's task was cancelled, not left running.
        var cancelled = fixture.cancellations.makeAsyncIterator()
        #expect(await cancelled.next() != nil)
        await fixture.server.shutdown()
    }

    @Test("HTTP calls are counted in the RPC server's metrics by method and code")
    func metrics() async throws {
        let fixture = try GatewayFixture()
        _ = try await fixture.postJSON(EntitlementRPC.checkAccess.name, #"{"accountId": "a"}"#)
        _ = try await fixture.postJSON(EntitlementRPC.checkAccess.name, #"{"accountId": "code-5"}"#)
        var text = MetricsText()
        fixture.server.writeMetrics(into: &text)
        let page = text.output
        let name = EntitlementRPC.checkAccess.name
        #expect(page.contains(#"rpc_server_calls_total{code="OK",method="\#(name)"} 1"#))
        #expect(page.contains(#"rpc_server_calls_total{code="NOT_FOUND",method="\#(name)"} 1"#))
        await fixture.server.shutdown()
    }

    @Test("a draining server answers unavailable")
    func draining() async throws {
        let fixture = try GatewayFixture()
        await fixture.server.shutdown()
        let answer = try await fixture.postJSON(EntitlementRPC.checkAccess.name, "{}")
        #expect(answer.status == 503)
        #expect(answer.text == #"{"code":"unavailable","message":"the server is shutting down"}"#)
    }
}
