import Config
import Model
import Observability
import RPC
import Sockets
import SubctlKit
import Synchronization
import Testing
import Wire

/// Answers each call with the trace the call went out under (the transport sees
/// `TraceContext.current`, as `RPCClient` does when it sends the envelope's traceparent).
private final class TraceEcho: BytesTransport {
    let seen = Mutex<[String]>([])

    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        seen.withLock { $0.append(TraceContext.current?.traceID ?? "none") }
        return HealthResponse(status: .serving, service: "ledger").serialized()
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        seen.withLock { $0.append(TraceContext.current?.traceID ?? "none") }
        return ([], nil)
    }
}

@Suite("subctl trace and -v: following one call")
struct TraceCommandTests {
    static let traceID = "0af7651916cd43dd8448eb211c80319c"
    let local = HostPort(host: "127.0.0.1", port: 7002)

    @Test("trace TRACE_ID parses to Ledger/FindTrace; what is not a trace id is a usage error")
    func parse() throws {
        #expect(
            try SubctlCommand.parse(["trace", Self.traceID, "--addr", "127.0.0.1:7002"])
                == .ledger(.trace(traceID: Self.traceID), options: CallOptions(address: local, timeout: .seconds(5))))
        #expect(LedgerCommand.trace(traceID: Self.traceID).method == "subscriptions.ledger.v1.Ledger/FindTrace")
        for bad in ["0AF7651916CD43DD8448EB211C80319C", "0af7651916cd43dd", String(repeating: "0", count: 32)] {
            #expect(throws: SubctlError.self) { try SubctlCommand.parse(["trace", bad, "--addr", "h:1"]) }
        }
        #expect {
            try SubctlCommand.parse(["trace", "--addr", "h:1"])
        } throws: { ($0 as? SubctlError)?.description == "USAGE: trace needs a TRACE_ID" }
    }

    @Test("trace prints the inbox entries, then the events, each on a line; nothing found says so")
    func output() async throws {
        let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000123")
        let found = FindTraceResponse(
            inboxEntries: [
                InboxEntry(
                    store: .apple, environment: .production, notificationID: "6a1f", notificationType: "SUBSCRIBED",
                    subtype: "INITIAL_BUY", receivedTimeMilliseconds: 1_714_638_600_000, status: .processed,
                    attempts: 1, key: key, rawPayload: "", traceID: Self.traceID)
            ],
            events: [
                LifecycleEvent(
                    position: 42, key: key, kind: .purchased, storeTimeMilliseconds: 1_714_638_600_000,
                    accountID: "acct-1", storeType: "SUBSCRIBED", storeSubtype: "INITIAL_BUY", notificationID: "6a1f",
                    state: .active, traceID: Self.traceID)
            ])
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/FindTrace": .success(found.serialized())
        ])
        let output = Mutex<[String]>([])
        let runner = CommandRunner { text in output.withLock { $0.append(text) } }
        try await runner.run(
            try SubctlCommand.parse(["trace", Self.traceID, "--addr", "h:1"]), transport: transport,
            standardInput: { "" })
        #expect(
            output.withLock { $0 } == [
                "inbox apple 6a1f SUBSCRIBED/INITIAL_BUY processed attempts 1 received 2024-05-02T08:30:00Z error -",
                "event #42 2024-05-02T08:30:00Z purchased state active type SUBSCRIBED/INITIAL_BUY account acct-1"
                    + " key apple/production/2000000123 notification 6a1f",
            ])
        #expect(transport.requests.withLock { $0 } == [FindTraceRequest(traceID: Self.traceID).serialized()])
        #expect(
            OutputText.trace(FindTraceResponse(), traceID: Self.traceID) == [
                "nothing recorded under trace \(Self.traceID)"
            ])
    }

    @Test("-v anywhere asks for a trace line per call; each call goes out under the trace it reports")
    func verbose() async throws {
        #expect(TracedTransport.verbose(["-v", "health", "--addr", "h:1"]) == (true, ["health", "--addr", "h:1"]))
        #expect(
            TracedTransport.verbose(["health", "--addr", "h:1", "--verbose"]) == (true, ["health", "--addr", "h:1"]))
        #expect(TracedTransport.verbose(["health", "--addr", "h:1"]) == (false, ["health", "--addr", "h:1"]))
        #expect(
            TracedTransport.verbose(["account", "--addr", "h:1", "--", "-v"]) == (
                false, ["account", "--addr", "h:1", "--", "-v"]
            ))
        let echo = TraceEcho()
        let reported = Mutex<[String]>([])
        let transport = TracedTransport(echo) { trace in reported.withLock { $0.append(trace.traceID) } }
        let runner = CommandRunner { _ in }
        for _ in 0..<2 {
            try await runner.run(
                try SubctlCommand.parse(["health", "--service", "ledger", "--addr", "h:1"]), transport: transport,
                standardInput: { "" })
        }
        let ids = reported.withLock { $0 }
        #expect(ids.count == 2 && ids[0] != ids[1] && ids.allSatisfy(TraceContext.isTraceID))
        #expect(echo.seen.withLock { $0 } == ids)
    }
}
