import Foundation
import Observability
import RPC
import Sockets
import Testing
import Wire

/// Two services, one calling the other while it serves a call, each logging a line per call:
/// the `traceparent` of each call, as its handler saw it, comes back as the answer.
private struct TracedPair {
    static let relay = "test.v1.Trace/Relay"
    static let leaf = "test.v1.Trace/Leaf"
    static let leafInline = "test.v1.Trace/LeafInline"

    let upstreamLog = LogSink.capturing()
    let downstreamLog = LogSink.capturing()
    let upstream: RPCServer
    let downstream: RPCServer
    let downstreamClient: RPCClient

    init() throws {
        var configuration = RPCServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let downstreamLogger = Logger(service: "downstream", minimumLevel: .debug, sink: downstreamLog)
        let leafRouter = RPCRouter()
        leafRouter.register(
            Self.leaf,
            .unary { _, _ in
                downstreamLogger.info("leaf")
                return Array((TraceContext.current?.traceparent ?? "none").utf8)
            })
        leafRouter.register(Self.leafInline, .inline { _, _ in throw CocoaError(.featureUnsupported) })
        downstream = try RPCServer(configuration: configuration, router: leafRouter, logger: downstreamLogger)
        try downstream.start()
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: downstream.port)])
        downstreamClient = client
        let upstreamLogger = Logger(service: "upstream", minimumLevel: .debug, sink: upstreamLog)
        let relayRouter = RPCRouter()
        relayRouter.register(
            Self.relay,
            .unary { context, _ in
                upstreamLogger.info("relay")
                let leaf = try await client.unary(Self.leaf, request: [])
                return Array("\(context.trace.traceparent) \(String(decoding: leaf, as: UTF8.self))".utf8)
            })
        upstream = try RPCServer(configuration: configuration, router: relayRouter, logger: upstreamLogger)
        try upstream.start()
    }

    func shutdown() async {
        downstreamClient.shutdown()
        await upstream.shutdown()
        await downstream.shutdown()
    }

    /// The `trace_id` of each captured line whose message is `message`.
    static func traceIDs(_ sink: LogSink, _ message: String) throws -> [String?] {
        try sink.captured.compactMap { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard object["msg"] as? String == message else { return nil }
            return .some(object["trace_id"] as? String)
        }
    }
}

@Suite("Trace context: one trace id through calls and log lines")
struct TraceTests {
    static let given = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!

    @Test(
        "a caller's trace id reaches the handler, the call it makes and every log line of both, each call with a new parent id"
    )
    func callerTraceFlows() async throws {
        let pair = try TracedPair()
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: pair.upstream.port)])
        let answer = try await TraceContext.$current.withValue(Self.given) {
            try await client.unary(TracedPair.relay, request: [])
        }
        let seen = String(decoding: answer, as: UTF8.self).split(separator: " ").compactMap {
            TraceContext(traceparent: String($0))
        }
        #expect(seen.count == 2)
        #expect(seen.map(\.traceID) == [Self.given.traceID, Self.given.traceID])
        #expect(seen.map(\.flags) == [1, 1])
        #expect(Set(seen.map(\.parentID) + [Self.given.parentID]).count == 3)
        #expect(try TracedPair.traceIDs(pair.upstreamLog, "relay") == [Self.given.traceID])
        #expect(try TracedPair.traceIDs(pair.downstreamLog, "leaf") == [Self.given.traceID])
        // Each service's debug line for the call it served.
        #expect(try TracedPair.traceIDs(pair.upstreamLog, "rpc call") == [Self.given.traceID])
        #expect(try TracedPair.traceIDs(pair.downstreamLog, "rpc call") == [Self.given.traceID])
        #expect(pair.downstreamLog.captured.contains { $0.contains(#""code":"OK","method":"test.v1.Trace/Leaf""#) })
        client.shutdown()
        await pair.shutdown()
    }

    @Test("a call without a trace gets a new one, which the calls it makes carry")
    func clientOutsideTraceStartsOne() async throws {
        let pair = try TracedPair()
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: pair.upstream.port)])
        let first = try await client.unary(TracedPair.relay, request: [])
        let second = try await client.unary(TracedPair.relay, request: [])
        let traces = [first, second].map { answer in
            String(decoding: answer, as: UTF8.self).split(separator: " ").compactMap {
                TraceContext(traceparent: String($0))?.traceID
            }
        }
        #expect(traces.map(\.count) == [2, 2])
        #expect(traces[0][0] == traces[0][1] && traces[1][0] == traces[1][1] && traces[0][0] != traces[1][0])
        #expect(try TracedPair.traceIDs(pair.downstreamLog, "leaf") == [traces[0][0], traces[1][0]])
        client.shutdown()
        await pair.shutdown()
    }

    @Test(
        "a request without a traceparent (a peer that does not send one) or with an invalid one is served under a new trace",
        arguments: [
            nil, "", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ])
    func invalidTraceparentStartsNewTrace(traceparent: String?) async throws {
        let pair = try TracedPair()
        let connection = try RawConnection(port: pair.downstream.port)
        connection.send(RawConnection.request(1, TracedPair.leaf, traceparent: traceparent))
        let reply = try #require(try await connection.readReply())
        #expect(reply.code == .ok)
        let seen = try #require(TraceContext(traceparent: String(decoding: reply.payload, as: UTF8.self)))
        #expect(seen.traceID != Self.given.traceID)
        #expect(try TracedPair.traceIDs(pair.downstreamLog, "leaf") == [seen.traceID])
        await pair.shutdown()
    }

    @Test("a valid traceparent sent by hand is the handler's, as sent")
    func rawTraceparentIsKept() async throws {
        let pair = try TracedPair()
        let connection = try RawConnection(port: pair.downstream.port)
        connection.send(RawConnection.request(1, TracedPair.leaf, traceparent: Self.given.traceparent))
        let reply = try #require(try await connection.readReply())
        #expect(String(decoding: reply.payload, as: UTF8.self) == Self.given.traceparent)
        await pair.shutdown()
    }

    @Test("an inline handler's failure is logged under the caller's trace")
    func inlineFailureTraced() async throws {
        let pair = try TracedPair()
        let connection = try RawConnection(port: pair.downstream.port)
        connection.send(RawConnection.request(1, TracedPair.leafInline, traceparent: Self.given.traceparent))
        let reply = try #require(try await connection.readReply())
        #expect(reply.code == .internal)
        #expect(try TracedPair.traceIDs(pair.downstreamLog, "handler failed") == [Self.given.traceID])
        await pair.shutdown()
    }

    @Test("an in-process call carries the caller's trace id with a new parent id")
    func inProcess() async throws {
        let pair = try TracedPair()
        let transport = InProcessTransport(server: pair.downstream)
        let answer = try await TraceContext.$current.withValue(Self.given) {
            try await transport.call(UnaryMethod<RawMessage, RawMessage>(TracedPair.leaf), RawMessage(bytes: []))
        }
        let seen = try #require(TraceContext(traceparent: String(decoding: answer.bytes, as: UTF8.self)))
        #expect(seen.traceID == Self.given.traceID && seen.parentID != Self.given.parentID)
        await pair.shutdown()
    }
}

@Suite("TraceContext: the traceparent format")
struct TraceContextTests {
    @Test("a valid traceparent parses and renders back exactly")
    func roundTrip() throws {
        let text = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let trace = try #require(TraceContext(traceparent: text))
        #expect(trace.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(trace.parentID == "b7ad6b7169203331")
        #expect(trace.flags == 1)
        #expect(trace.traceparent == text)
        #expect(TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")?.flags == 0)
    }

    @Test(
        "what is not a version 00 traceparent is nil",
        arguments: [
            "", "00", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
            "00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            " 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ])
    func invalid(text: String) {
        #expect(TraceContext(traceparent: text) == nil)
        #expect(TraceContext.continuing(text).traceID != "0af7651916cd43dd8448eb211c80319c")
    }

    @Test("a new trace and a child: 32 and 16 lowercase hex digits; a child keeps the trace id and flags")
    func startAndChild() throws {
        let trace = TraceContext.start()
        #expect(TraceContext(traceparent: trace.traceparent) == trace)
        #expect(TraceContext.isTraceID(trace.traceID))
        let child = trace.child()
        #expect(child.traceID == trace.traceID && child.flags == trace.flags && child.parentID != trace.parentID)
        #expect(TraceContext.start().traceID != trace.traceID)
        #expect(TraceContext.outgoing().traceID != trace.traceID)
        TraceContext.$current.withValue(trace) { #expect(TraceContext.outgoing().traceID == trace.traceID) }
        let resumed = try #require(TraceContext(traceID: trace.traceID))
        #expect(resumed.traceID == trace.traceID && resumed.parentID != trace.parentID)
        #expect(TraceContext(traceID: String(repeating: "0", count: 32)) == nil)
        #expect(!TraceContext.isTraceID("0af7651916cd43dd8448eb211c80319"))
    }

    @Test("a log line written under a trace carries its trace_id; one written outside none; a field of its own wins")
    func loggerStampsTraceID() throws {
        let sink = LogSink.capturing()
        let logger = Logger(service: "test", sink: sink, clock: ManualClock())
        let trace = try #require(TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
        logger.info("outside")
        TraceContext.$current.withValue(trace) {
            logger.info("inside", ["a": "b"])
            logger.info("own", ["trace_id": "mine"])
        }
        #expect(
            sink.captured.map {
                $0.replacingOccurrences(of: #"^\{"ts":"[^"]*","#, with: "{", options: .regularExpression)
            }
                == [
                    #"{"level":"info","service":"test","msg":"outside"}"# + "\n",
                    #"{"level":"info","service":"test","msg":"inside","a":"b","trace_id":"0af7651916cd43dd8448eb211c80319c"}"#
                        + "\n",
                    #"{"level":"info","service":"test","msg":"own","trace_id":"mine"}"# + "\n",
                ])
    }
}
