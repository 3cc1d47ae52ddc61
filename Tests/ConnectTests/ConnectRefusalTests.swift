import Connect
import HTTP
import RPC
import TestSupport
import Testing
import Wire

@Suite("What the HTTP listener answers when no method is called: Connect error bodies that say what to fix")
struct ConnectRefusalTests {
    /// The full names of `service`'s unary methods, as a gateway to all of them routes them.
    static func unary(_ service: String) -> [String] {
        ProtoSchema.services.first { $0.fullName == service }!.methods.filter { !$0.isServerStreaming }.map {
            "\(service)/\($0.name)"
        }
    }

    static let verifier = unary("subscriptions.verifier.v1.Verifier")
    static let ledger = unary("subscriptions.ledger.v1.Ledger")
    static let entitlement = unary("subscriptions.entitlement.v1.Entitlement")
    static let here = "POST /subscriptions.entitlement.v1.Entitlement/<Method>, listed at GET /openapi.json"

    @Test(
        "each refusal is a Connect body with its HTTP status and the code a client infers from it",
        arguments: [
            (
                HTTPRefusal.notFound(
                    method: "POST", path: "/subscriptions.entitlement.v1.Entitlement/CheckAccess", served: []),
                verifier, 404,
                #"{"code":"unimplemented","message":"subscriptions.entitlement.v1.Entitlement/CheckAccess is the entitlement service's: call it on that service's HTTP listener (HTTP_LISTEN, port 8003 by default); this listener (the verifier service's) serves POST /subscriptions.verifier.v1.Verifier/<Method>, listed at GET /openapi.json"}"#
            ),
            (
                .notFound(method: "POST", path: "/subscriptions.ledger.v1.ledger/getfeedposition", served: []),
                entitlement, 404,
                #"{"code":"unimplemented","message":"subscriptions.ledger.v1.Ledger/GetFeedPosition is the ledger service's: call it on that service's HTTP listener (HTTP_LISTEN, port 8002 by default); this listener (the entitlement service's) serves \#(here)"}"#
            ),
            (
                .notFound(method: "POST", path: "/subscriptions.entitlement.v1.entitlement/checkAccess", served: []),
                entitlement, 404,
                #"{"code":"unimplemented","message":"no method at /subscriptions.entitlement.v1.entitlement/checkAccess: paths are case-sensitive; use /subscriptions.entitlement.v1.Entitlement/CheckAccess"}"#
            ),
            (
                .notFound(method: "GET", path: "/", served: []), entitlement, 404,
                #"{"code":"unimplemented","message":"no method at /: this listener (the entitlement service's) serves \#(here)"}"#
            ),
            (
                .notFound(method: "POST", path: "/subscriptions.ledger.v1.Ledger/WatchChanges", served: []), ledger,
                404,
                #"{"code":"unimplemented","message":"subscriptions.ledger.v1.Ledger/WatchChanges is a server stream: it is served over the framed protocol (the ledger service's RPC_LISTEN, port 7002 by default), not over HTTP"}"#
            ),
            (
                .notFound(method: "POST", path: "/subscriptions.entitlement.v1.Entitlement/Health", served: []),
                Array(entitlement.dropFirst()), 404,
                #"{"code":"unimplemented","message":"subscriptions.entitlement.v1.Entitlement/Health is not served by this listener; this listener (the entitlement service's) serves \#(here)"}"#
            ),
            (
                .methodNotAllowed(
                    method: "GET", path: "/subscriptions.entitlement.v1.Entitlement/CheckAccess", allow: ["POST"]),
                entitlement, 405,
                #"{"code":"unknown","message":"subscriptions.entitlement.v1.Entitlement/CheckAccess takes POST, not GET: post the request as the body, with Content-Type: application/json (proto3 JSON) or application/proto"}"#
            ),
            (
                .methodNotAllowed(method: "POST", path: "/openapi.json", allow: ["GET"]), entitlement, 405,
                #"{"code":"unknown","message":"/openapi.json takes GET, not POST"}"#
            ),
            (
                .tooLarge(limit: 1024), entitlement, 413,
                #"{"code":"unknown","message":"the request body exceeds this listener's limit of 1024 bytes"}"#
            ),
        ])
    func refusal(refusal: HTTPRefusal, methods: [String], status: Int, body: String) {
        let response = ConnectGateway.refusal(refusal, methods: methods, openAPI: true)
        #expect(response.status == status)
        #expect(response.headers.map { "\($0.0): \($0.1)" } == ["Content-Type: application/json"])
        #expect(String(decoding: response.body, as: UTF8.self) == body)
    }

    @Test("a gateway of several services, or none, says so; a long path is cut")
    func severalServices() {
        let both = ConnectGateway.refusal(
            .notFound(method: "POST", path: "/" + String(repeating: "x", count: 150), served: []),
            methods: Self.ledger + Self.entitlement, openAPI: false)
        #expect(
            String(decoding: both.body, as: UTF8.self)
                == #"{"code":"unimplemented","message":"no method at /\#(String(repeating: "x", count: 99))…: this listener serves POST /subscriptions.entitlement.v1.Entitlement/<Method> and POST /subscriptions.ledger.v1.Ledger/<Method>"}"#
        )
        let none = ConnectGateway.refusal(
            .notFound(method: "POST", path: "/a", served: []), methods: [], openAPI: false)
        #expect(
            String(decoding: none.body, as: UTF8.self)
                == #"{"code":"unimplemented","message":"no method at /a: this listener serves no method"}"#)
    }

    @Test("over HTTP: a wrong path, a wrong HTTP method and a wrong Content-Type each get a Connect body")
    func overHTTP() async throws {
        let fixture = try GatewayFixture()
        let port = fixture.http.port
        let misplaced = try await connectCall(
            port: port, method: "subscriptions.verifier.v1.Verifier/VerifyApplePurchase", body: Array("{}".utf8))
        #expect(misplaced.status == 404)
        #expect(misplaced.contentType == "application/json")
        #expect(
            misplaced.text
                == #"{"code":"unimplemented","message":"subscriptions.verifier.v1.Verifier/VerifyApplePurchase is the verifier service's: call it on that service's HTTP listener (HTTP_LISTEN, port 8001 by default); this listener (the entitlement service's) serves \#(Self.here)"}"#
        )
        let lowercase = try await connectCall(
            port: port, method: "subscriptions.entitlement.v1.Entitlement/checkaccess", body: Array("{}".utf8))
        #expect(lowercase.status == 404)
        #expect(
            lowercase.text
                == #"{"code":"unimplemented","message":"no method at /subscriptions.entitlement.v1.Entitlement/checkaccess: paths are case-sensitive; use /subscriptions.entitlement.v1.Entitlement/CheckAccess"}"#
        )
        let get = try await connectCall(
            port: port, method: EntitlementRPC.checkAccess.name, body: [], httpMethod: "GET")
        #expect(get.status == 405)
        #expect(get.headers["allow"] == "POST")
        #expect(get.contentType == "application/json")
        #expect(
            get.text
                == #"{"code":"unknown","message":"subscriptions.entitlement.v1.Entitlement/CheckAccess takes POST, not GET: post the request as the body, with Content-Type: application/json (proto3 JSON) or application/proto"}"#
        )
        // What curl -d sends without -H.
        let form = try await connectCall(
            port: port, method: EntitlementRPC.checkAccess.name, body: Array("{}".utf8),
            contentType: "application/x-www-form-urlencoded")
        #expect(form.status == 415)
        #expect(form.headers["accept-post"] == "application/json, application/proto")
        #expect(form.contentType == "application/json")
        #expect(
            form.text
                == #"{"code":"unknown","message":"Content-Type must be application/json or application/proto, got \"application/x-www-form-urlencoded\": send Content-Type: application/json with the request in proto3 JSON"}"#
        )
        await fixture.server.shutdown()
    }
}
