import Connect
import Foundation
import HTTP
import Observability
import RPC
import TestSupport
import Testing
import Wire

@Suite("Connect: a call's traceparent header is its handler's trace")
struct ConnectTraceTests {
    static let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    /// The trace `ListEntitlements` ran under, sent as the answer's capability, for a call with
    /// `headers`.
    static func servedTrace(headers: [String: String]) async throws -> TraceContext? {
        let router = RPCRouter()
        router.unary(EntitlementRPC.listEntitlements) { _, _ in
            ListEntitlementsResponse(entitlements: [
                EntitlementEntry(capability: TraceContext.current?.traceparent ?? "none", grants: [])
            ])
        }
        let server = try RPCServer(configuration: RPCServerConfiguration(), router: router)
        let http = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "test", sink: .capturing()))
        ConnectGateway(server: server, identify: { _ in .success(nil) }).install(on: http)
        try http.start()
        defer { http.stop() }
        let answer = try await connectCall(
            port: http.port, method: EntitlementRPC.listEntitlements.name, body: Array(#"{"accountId": "a"}"#.utf8),
            contentType: "application/json", headers: headers)
        let object = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any]
        let entries = object?["entitlements"] as? [[String: Any]]
        return (entries?.first?["capability"] as? String).flatMap { TraceContext(traceparent: $0) }
    }

    @Test("a valid traceparent header is the handler's trace, as sent")
    func given() async throws {
        #expect(try await Self.servedTrace(headers: ["traceparent": Self.given])?.traceparent == Self.given)
    }

    @Test("without the header, or with an invalid one, the handler runs under a new trace")
    func newTrace() async throws {
        for headers in [[:], ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"]] {
            let trace = try #require(try await Self.servedTrace(headers: headers))
            #expect(trace.traceID != "4bf92f3577b34da6a3ce929d0e0e4736")
        }
    }
}
