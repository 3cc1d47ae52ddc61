import Config
import ProtoJSON
import Sockets
import SubctlKit
import Synchronization
import Testing
import Wire

/// A transport that answers from a table and records the methods called, in order.
final class FakeTransport: BytesTransport {
    let answers: [String: Result<[UInt8], SubctlError>]
    let streams: [String: (messages: [[UInt8]], end: SubctlError?)]
    let calls = Mutex<[String]>([])
    let requests = Mutex<[[UInt8]]>([])

    init(
        answers: [String: Result<[UInt8], SubctlError>] = [:],
        streams: [String: (messages: [[UInt8]], end: SubctlError?)] = [:]
    ) {
        self.answers = answers
        self.streams = streams
    }

    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        calls.withLock { $0.append(method) }
        requests.withLock { $0.append(request) }
        return try (answers[method] ?? .failure(SubctlError(.rpc(.unimplemented), "unknown method \(method)"))).get()
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        calls.withLock { $0.append(method) }
        requests.withLock { $0.append(request) }
        return streams[method] ?? ([], SubctlError(.rpc(.unimplemented), "unknown method \(method)"))
    }
}

@Suite("OutputText and CommandRunner: what subctl prints")
struct OutputAndRunnerTests {
    let address = HostPort(host: "127.0.0.1", port: 7002)
    let ledgerHealth = HealthResponse(
        status: .serving, service: "ledger", version: "0.1.0", uptimeMilliseconds: 12_345,
        serverTimeMilliseconds: 1_700_000_000_000, connections: 4)

    /// Runs `arguments` against `transport` and returns the printed output.
    func run(_ arguments: [String], _ transport: FakeTransport, input: String = "") async throws(SubctlError)
        -> [String]
    {
        let output = Mutex<[String]>([])
        let runner = CommandRunner { text in output.withLock { $0.append(text) } }
        try await runner.run(try SubctlCommand.parse(arguments), transport: transport, standardInput: { input })
        return output.withLock { $0 }
    }

    @Test func healthLine() throws {
        #expect(
            try OutputText.health(ledgerHealth.serialized(), address: address, json: false)
                == "ledger SERVING version 0.1.0 uptime 12.3s connections 4 at 127.0.0.1:7002")
        #expect(
            try OutputText.health(ledgerHealth.serialized(), address: address, json: true)
                == #"{"status":"SERVING_STATUS_SERVING","service":"ledger","version":"0.1.0","uptimeMs":"12345","#
                + #""serverTimeMs":"1700000000000","connections":4}"#)
    }

    @Test func healthTriesTheNextServiceOnlyWhileUnimplemented() async throws {
        let verifier = FakeTransport(answers: [
            "subscriptions.verifier.v1.Verifier/Health": .success(
                HealthResponse(
                    status: .draining, service: "verifier", version: "0.2.0", uptimeMilliseconds: 999,
                    serverTimeMilliseconds: 0, connections: 0
                ).serialized())
        ])
        #expect(
            try await run(["health", "--addr", "127.0.0.1:7002"], verifier)
                == ["verifier DRAINING version 0.2.0 uptime 0.9s connections 0 at 127.0.0.1:7002"])
        #expect(
            verifier.calls.withLock { $0 }
                == ["subscriptions.ledger.v1.Ledger/Health", "subscriptions.verifier.v1.Verifier/Health"])
        #expect(verifier.requests.withLock { $0 } == [[], []])

        let down = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/Health": .failure(SubctlError(.rpc(.unavailable), "connection refused"))
        ])
        let error = await #expect(throws: SubctlError.self) { try await run(["health", "--addr", "h:1"], down) }
        #expect(error.map(OutputText.error) == "error: UNAVAILABLE: connection refused")
        #expect(down.calls.withLock { $0 } == ["subscriptions.ledger.v1.Ledger/Health"])

        let nothing = FakeTransport()
        let last = await #expect(throws: SubctlError.self) { try await run(["health", "--addr", "h:1"], nothing) }
        #expect(last?.description == "UNIMPLEMENTED: unknown method subscriptions.entitlement.v1.Entitlement/Health")
        #expect(nothing.calls.withLock { $0.count } == 3)
    }

    @Test func callEncodesTheRequestAndPrintsPrettyOrCompactJSON() async throws {
        let answer = try ProtoJSON.encode(
            json: #"{"allowed": true, "untilMs": "5", "reason": "ACCESS_REASON_GRANTED"}"#,
            as: "subscriptions.entitlement.v1.CheckAccessResponse")
        let transport = FakeTransport(answers: [
            "subscriptions.entitlement.v1.Entitlement/CheckAccess": .success(answer)
        ])
        #expect(
            try await run(
                ["call", "CheckAccess", #"{"accountId": "a", "capability": "pro"}"#, "--addr", "h:1"], transport)
                == ["{\n  \"allowed\": true,\n  \"untilMs\": \"5\",\n  \"reason\": \"ACCESS_REASON_GRANTED\"\n}"])
        #expect(
            try await run(["call", "Entitlement/CheckAccess", "-", "--json", "--addr", "h:1"], transport, input: "{}")
                == [#"{"allowed":true,"untilMs":"5","reason":"ACCESS_REASON_GRANTED"}"#])
        #expect(
            transport.requests.withLock { $0 }
                == [
                    try ProtoJSON.encode(
                        json: #"{"account_id": "a", "capability": "pro"}"#,
                        as: "subscriptions.entitlement.v1.CheckAccessRequest"),
                    [],
                ])
    }

    @Test func streamsPrintEachMessageThenTheEndStatus() async throws {
        let change = { (position: Int) in
            try ProtoJSON.encode(json: #"{"position": \#(position)}"#, as: "subscriptions.ledger.v1.Change")
        }
        let transport = FakeTransport(streams: [
            "subscriptions.ledger.v1.Ledger/WatchChanges": (
                [try change(11), try change(12)], SubctlError(.rpc(.cancelled), "server draining")
            )
        ])
        let printed = Mutex<[String]>([])
        let runner = CommandRunner { text in printed.withLock { $0.append(text) } }
        let command = try SubctlCommand.parse(["call", "WatchChanges", #"{"after": 10}"#, "--json", "--addr", "h:1"])
        let error = await #expect(throws: SubctlError.self) {
            try await runner.run(command, transport: transport, standardInput: { "" })
        }
        #expect(printed.withLock { $0 } == [#"{"position":"11"}"#, #"{"position":"12"}"#])
        #expect(error?.description == "CANCELLED: server draining")
        #expect(error?.code.exitCode == 1)
        #expect(
            transport.requests.withLock { $0 }
                == [
                    try ProtoJSON.encode(
                        json: #"{"after": "10"}"#, as: "subscriptions.ledger.v1.WatchChangesRequest")
                ])
    }

    @Test func badRequestJSONFailsBeforeAnyCall() async {
        let transport = FakeTransport()
        let error = await #expect(throws: SubctlError.self) {
            try await run(["call", "GetAccount", #"{"acount_id": "a"}"#, "--addr", "h:1"], transport)
        }
        #expect(
            error.map(OutputText.error)
                == #"error: INVALID_ARGUMENT: subscriptions.ledger.v1.GetAccountRequest has no field "acount_id""#)
        #expect(transport.calls.withLock { $0 }.isEmpty)
    }

    @Test func methodsMarksStreams() throws {
        let lines = OutputText.methods().split(separator: "\n").map(String.init)
        #expect(lines.count == 55)
        #expect(
            lines.first { $0.hasPrefix("subscriptions.ledger.v1.Ledger/Snapshot ") }
                == "subscriptions.ledger.v1.Ledger/Snapshot                             "
                + "subscriptions.ledger.v1.SnapshotRequest → stream subscriptions.ledger.v1.SnapshotChunk")
        #expect(
            lines.first
                == "subscriptions.verifier.v1.Verifier/Health                           "
                + "subscriptions.common.v1.HealthRequest → subscriptions.common.v1.HealthResponse")
    }

    @Test func describeMessagesEnumsAndMethods() throws {
        #expect(
            try OutputText.describe("SubscriptionKey") == """
                message subscriptions.common.v1.SubscriptionKey
                  1  store        subscriptions.common.v1.Store
                  2  environment  subscriptions.common.v1.Environment
                  3  storeId      string
                """)
        #expect(
            try OutputText.describe("subscriptions.ledger.v1.InboxStatus") == """
                enum subscriptions.ledger.v1.InboxStatus
                  0  INBOX_STATUS_UNSPECIFIED
                  1  INBOX_STATUS_PENDING
                  2  INBOX_STATUS_PROCESSED
                  3  INBOX_STATUS_FAILED
                  4  INBOX_STATUS_REJECTED
                """)
        #expect(
            try OutputText.describe("Ledger/Snapshot") == """
                rpc subscriptions.ledger.v1.Ledger/Snapshot(subscriptions.ledger.v1.SnapshotRequest) \
                returns (stream subscriptions.ledger.v1.SnapshotChunk)

                message subscriptions.ledger.v1.SnapshotRequest
                  1  statesOnly  bool

                message subscriptions.ledger.v1.SnapshotChunk
                  1  subscriptions          repeated subscriptions.common.v1.Subscription
                  2  links                  repeated subscriptions.common.v1.AccountLink
                  3  complete               bool
                  4  position               uint64
                  5  expectedSubscriptions  uint64
                  6  positionCommittedMs    int64
                """)
        let ambiguous = #expect(throws: SubctlError.self) { try OutputText.describe("Health") }
        #expect(
            ambiguous?.description
                == "INVALID_ARGUMENT: Health is ambiguous: subscriptions.verifier.v1.Verifier/Health, "
                + "subscriptions.ledger.v1.Ledger/Health, subscriptions.entitlement.v1.Entitlement/Health")
        let missing = #expect(throws: SubctlError.self) { try OutputText.describe("Nope") }
        #expect(
            missing?.description
                == "NOT_FOUND: no message, enum or method named Nope (subctl methods lists the methods)")
    }
}
