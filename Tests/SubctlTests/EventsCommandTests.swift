import Model
import SubctlKit
import Synchronization
import Testing
import Wire

/// Answers ListEvents from a fixed log (`limit` entries after the request's sequence, of its
/// types), ListDeadLetters from two dead letters of `crm` (the log's 2nd and 3rd events, `limit`
/// a page, the token the last sequence given) and ReplayDeliveries with a fixed answer; records
/// each method.
final class EventLogTransport: RPCTransport {
    let log: [Event]
    let methods = Mutex<[String]>([])

    init(_ log: [Event]) { self.log = log }

    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        methods.withLock { $0.append(method) }
        do {
            switch method {
            case "subscriptions.ledger.v1.Ledger/ListEvents":
                let asked = try ListEventsRequest(serialized: request)
                let page = log.filter { $0.sequence > asked.afterSequence }.prefix(
                    Int(asked.limit == 0 ? 100 : asked.limit))
                return ListEventsResponse(
                    events: page.filter { EventType.matches($0.type, asked.types) },
                    lastSequence: page.last?.sequence ?? asked.afterSequence
                ).serialized()
            case "subscriptions.ledger.v1.Ledger/ListDeadLetters":
                let asked = try ListDeadLettersRequest(serialized: request)
                let after = asked.pageToken.flatMap { UInt64($0) } ?? 0
                let letters = log[1...2].filter { $0.sequence > after }.map { event in
                    DeadLetter(
                        endpoint: "crm",
                        attempt: DeliveryAttempt(
                            sequence: event.sequence, attempts: 9, firstAttemptMilliseconds: 1_714_564_800_000,
                            lastStatus: 503, deadMilliseconds: 1_714_824_000_000, event: event))
                }
                let page = Array(letters.prefix(Int(asked.limit == 0 ? 100 : asked.limit)))
                return ListDeadLettersResponse(
                    deadLetters: page,
                    nextPageToken: page.count < letters.count ? page.last.map { "\($0.attempt!.sequence)" } : nil
                ).serialized()
            case "subscriptions.ledger.v1.Ledger/ReplayDeliveries":
                let asked = try ReplayDeliveriesRequest(serialized: request)
                return GetDeliveryStateResponse(deliveredThrough: asked.afterSequence).serialized()
            default:
                throw SubctlError(.rpc(.unimplemented), method)
            }
        } catch let error as RPCError {
            throw SubctlError(.rpc(.invalidArgument), error.message)
        } catch {
            throw SubctlError(.rpc(.unknown), "\(error)")
        }
    }

    func serverStream(
        _ method: String, request: [UInt8], timeout: Duration?, onMessage: ([UInt8]) throws(SubctlError) -> Void
    ) async throws(SubctlError) {
        throw SubctlError(.rpc(.unimplemented), method)
    }
}

@Suite("subctl events")
struct EventsCommandTests {
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000001")
    static let log = [
        Event(
            id: "evt_40_0", type: "subscription.renewed", accountID: "acct-1", key: key, position: 40,
            recordedTimeMilliseconds: 1_714_564_800_000, sequence: 1),
        Event(
            id: "evt_40_granted_1", type: "access.granted", accountID: "acct-1", key: key, position: 40,
            recordedTimeMilliseconds: 1_714_564_800_000, capability: "pro", accessUntilMilliseconds: 1_717_243_200_000,
            sequence: 2),
        Event(
            id: "evt_41_ended_2", type: "access.ended", accountID: "acct-2", position: 41,
            recordedTimeMilliseconds: 1_714_651_200_000, capability: "pro", reason: "expired", sequence: 3),
    ]

    func run(_ arguments: [String], _ transport: some RPCTransport) async throws(SubctlError) -> [String] {
        let output = Mutex<[String]>([])
        let runner = CommandRunner { text in output.withLock { $0.append(text) } }
        try await runner.run(
            try SubctlCommand.parse(arguments + ["--addr", "127.0.0.1:7002"]), transport: transport,
            standardInput: { "" })
        return output.withLock { $0 }
    }

    @Test("events list prints a line per event and where to continue; --types chooses")
    func list() async throws {
        let transport = EventLogTransport(Self.log)
        #expect(
            try await run(["events", "list"], transport) == [
                "#1 evt_40_0 subscription.renewed account acct-1 key apple/production/2000001 at 2024-05-01T12:00:00Z",
                "#2 evt_40_granted_1 access.granted account acct-1 key apple/production/2000001 at 2024-05-01T12:00:00Z capability pro until 2024-06-01T12:00:00Z",
                "#3 evt_41_ended_2 access.ended account acct-2 key - at 2024-05-02T12:00:00Z capability pro reason expired",
                "last sequence 3",
            ])
        #expect(
            try await run(["events", "list", "--after", "1", "--types", "access.ended"], transport) == [
                "#3 evt_41_ended_2 access.ended account acct-2 key - at 2024-05-02T12:00:00Z capability pro reason expired",
                "last sequence 3",
            ])
    }

    @Test("events tail prints from a sequence as events come, and stops after --count")
    func tail() async throws {
        let transport = EventLogTransport(Self.log)
        let lines = try await run(["events", "tail", "--after", "1", "--count", "2"], transport)
        #expect(lines.map { $0.split(separator: " ")[1] } == ["evt_40_granted_1", "evt_41_ended_2"])
    }

    @Test("events dead and events replay call the ledger's delivery methods; dead letters a page at a time or --all")
    func deadAndReplay() async throws {
        let transport = EventLogTransport(Self.log)
        let letters = [
            "crm #2 attempts 9 last-status 503 first 2024-05-01T12:00:00Z dead 2024-05-04T12:00:00Z event evt_40_granted_1 access.granted",
            "crm #3 attempts 9 last-status 503 first 2024-05-01T12:00:00Z dead 2024-05-04T12:00:00Z event evt_41_ended_2 access.ended",
        ]
        #expect(try await run(["events", "dead", "--endpoint", "crm"], transport) == letters)
        #expect(
            try await run(["events", "dead", "--limit", "1"], transport) == [
                letters[0], "more dead letters: add --all to read every page",
            ])
        #expect(try await run(["events", "dead", "--limit", "1", "--all"], transport) == letters)
        transport.methods.withLock { $0.removeAll() }
        #expect(
            try await run(["events", "replay", "--endpoint", "crm", "--from", "1"], transport) == [
                "endpoint crm delivered through 1 enabled"
            ])
        #expect(
            transport.methods.withLock { $0 } == ["subscriptions.ledger.v1.Ledger/ReplayDeliveries"])
    }

    @Test(
        "bad events command lines are usage errors naming the fault",
        arguments: [
            (["events", "--addr", "h:1"], "events needs list, tail, dead, replay or test, got \"--addr\""),
            (["events", "show"], "events needs list, tail, dead, replay or test, got \"show\""),
            (
                ["events", "list", "--types", "renewed"],
                "--types: \"renewed\" is not an event type or a prefix with .*"
            ),
            (["events", "list", "--limit", "5000"], "--limit expects a number 1...1000, got \"5000\""),
            (["events", "replay", "--endpoint", "crm"], "events replay needs --endpoint NAME and --from SEQUENCE"),
            (["events", "tail", "--count", "0"], "--count expects a positive number, got \"0\""),
        ])
    func usage(arguments: [String], message: String) {
        #expect(throws: SubctlError(.usage, message)) {
            try SubctlCommand.parse(
                arguments.count > 1 && arguments[1] == "--addr" ? arguments : arguments + ["--addr", "h:1"])
        }
        #expect(throws: SubctlError(.usage, "events needs list, tail, dead, replay or test")) {
            try SubctlCommand.parse(["events"])
        }
    }
}
