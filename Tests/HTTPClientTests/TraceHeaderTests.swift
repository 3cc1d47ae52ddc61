import Foundation
import HTTP
import HTTPClient
import Observability
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `traceparent` header between the HTTP client transport and the HTTP server: what the
/// client sends and what the server's handler runs under.
@Suite("HTTP trace context: the traceparent header")
struct TraceHeaderTests {
    static let given = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!

    /// A server whose one route answers `<header as received> <trace its handler ran under>`.
    static func server() throws -> HTTPClientTransportTests.Server {
        let server = try HTTPClientTransportTests.Server()
        server.http.route("GET", "/trace") { request in
            let received = request.headers["traceparent"] ?? "none"
            return .text("\(received) \(TraceContext.current?.traceparent ?? "none")")
        }
        return server
    }

    /// The header the server received and the trace its handler ran under.
    static func exchange(_ request: URLRequest) async throws -> (received: String, served: TraceContext?) {
        let transport = HTTPClientTransport(requestTimeout: 10, maxResponseBytes: 1024)
        let body = try await transport.perform(request).get().body
        let parts = String(decoding: body, as: UTF8.self).split(separator: " ").map(String.init)
        try #require(parts.count == 2)
        return (parts[0], TraceContext(traceparent: parts[1]))
    }

    @Test("new traces, and new parent ids, do not repeat and read back as sent")
    func newIDsDoNotRepeat() {
        let traces = (0..<10_000).map { _ in TraceContext.start() }
        let children = traces.prefix(1000).flatMap { trace in (0..<10).map { _ in trace.child() } }
        #expect(Set(traces.map(\.traceID)).count == traces.count)
        #expect(Set((traces + children).map(\.parentID)).count == traces.count + children.count)
        #expect(traces.allSatisfy { TraceContext(traceparent: $0.traceparent) == $0 })
        #expect(children.allSatisfy { TraceContext(traceparent: $0.traceparent) == $0 && $0.flags == 1 })
    }

    @Test("a request made while serving a call carries its trace id with a new parent id, which the handler runs under")
    func carriesCurrentTrace() async throws {
        let server = try Self.server()
        let (received, served) = try await TraceContext.$current.withValue(Self.given) {
            try await Self.exchange(URLRequest(url: server.url("/trace")))
        }
        let sent = try #require(TraceContext(traceparent: received))
        #expect(sent.traceID == Self.given.traceID && sent.parentID != Self.given.parentID)
        #expect(served == sent)
    }

    @Test("a request made outside a call starts a trace; a request's own traceparent is sent as it is")
    func startsOrKeeps() async throws {
        let server = try Self.server()
        let (received, served) = try await Self.exchange(URLRequest(url: server.url("/trace")))
        #expect(TraceContext(traceparent: received) != nil && served == TraceContext(traceparent: received))
        var request = URLRequest(url: server.url("/trace"))
        request.setValue(Self.given.traceparent, forHTTPHeaderField: "traceparent")
        let kept = try await Self.exchange(request)
        #expect(kept.received == Self.given.traceparent && kept.served == Self.given)
    }

    @Test(
        "the server serves a request with an invalid traceparent under a new trace",
        arguments: ["garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"])
    func invalidHeader(header: String) async throws {
        let server = try Self.server()
        var request = URLRequest(url: server.url("/trace"))
        request.setValue(header, forHTTPHeaderField: "traceparent")
        let (received, served) = try await Self.exchange(request)
        #expect(received == header)
        let trace = try #require(served)
        #expect(trace.traceID != "00000000000000000000000000000000")
    }
}
