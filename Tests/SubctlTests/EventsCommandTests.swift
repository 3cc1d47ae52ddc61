import Model
import SubctlKit
import Synchronization
import Testing
import Wire

/// Answers ListEvents from a fixed log (`limit` entries after the request's sequence, of its
/// types), ListDeadLetters from two dead letters of `crm` (the log's 2nd and 3rd events, `limit`
/// a page, the token the last sequence given), ReplayDeliveries with a fixed answer,
/// GetEventState with `state`, GetFeedPosition with `newest`, and WatchChanges
/// with `changes` after the request's position (then the stream ends); records each method.
final class EventLogTransport: BytesTransport {
    let log: [Event]
    let changes: [Change]
    let state: GetEventStateResponse
    let newest: UInt64?
    let methods = Mutex<[String]>([])

    /// `newest` is what GetFeedPosition answers, the last of `changes` when nil.
    init(
        _ log: [Event], changes: [Change] = [], state: GetEventStateResponse = GetEventStateResponse(),
        newest: UInt64? = nil
    ) {
        self.log = log
        self.changes = changes
        self.state = state
        self.newest = newest
    }

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
            case "subscriptions.ledger.v1.Ledger/GetEventState":
                return state.serialized()
            case "subscriptions.ledger.v1.Ledger/GetFeedPosition":
                return GetFeedPositionResponse(position: newest ?? changes.last?.position ?? 0).serialized()
            default:
                throw SubctlError(.rpc(.unimplemented), method)
            }
        } catch let error as RPCError {
            throw SubctlError(.rpc(.invalidArgument), error.message)
        } catch {
            throw SubctlError(.rpc(.unknown), "\(error)")
        }
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        methods.withLock { $0.append(method) }
        guard method == "subscriptions.ledger.v1.Ledger/WatchChanges" else {
            return ([], SubctlError(.rpc(.unimplemented), method))
        }
        // The feed may take longer to read than one call's deadline.
        #expect(timeout == nil)
        let after: UInt64
        do {
            after = try WatchChangesRequest(serialized: request).after
        } catch {
            return ([], SubctlError(.rpc(.invalidArgument), error.message))
        }
        return (changes.filter { $0.position > after }.map { $0.serialized() }, nil)
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

    func run(_ arguments: [String], _ transport: some BytesTransport) async throws(SubctlError) -> [String] {
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
        // A full page says where the next one starts.
        #expect(
            try await run(["events", "list", "--limit", "1"], transport) == [
                "#1 evt_40_0 subscription.renewed account acct-1 key apple/production/2000001 at 2024-05-01T12:00:00Z",
                "last sequence 1 (more may follow: --after 1)",
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
        // One dead letter, with a reason.
        let one = try SubctlCommand.parse([
            "events", "replay", "--endpoint", "crm", "--sequence", "2", "--reason", "ticket 9", "--addr", "h:1",
        ])
        guard case .ledger(let command, _) = one else {
            Issue.record("not a ledger command: \(one)")
            return
        }
        #expect(command == .replayDeliveries(endpoint: "crm", after: 0, sequence: 2, reason: "ticket 9"))
    }

    @Test(
        "bad events command lines are usage errors naming the fault",
        arguments: [
            (["events", "--addr", "h:1"], "events needs list, tail, dead, replay, test or verify, got \"--addr\""),
            (["events", "show"], "events needs list, tail, dead, replay, test or verify, got \"show\""),
            (
                ["events", "list", "--types", "renewed"],
                "--types: \"renewed\" is not an event type or a prefix with .*"
            ),
            (["events", "list", "--limit", "5000"], "--limit expects a number 1...1000, got \"5000\""),
            (
                ["events", "replay", "--endpoint", "crm"],
                "events replay needs --endpoint NAME and one of --from SEQUENCE and --sequence SEQUENCE"
            ),
            (
                ["events", "replay", "--endpoint", "crm", "--from", "1", "--sequence", "2"],
                "events replay needs --endpoint NAME and one of --from SEQUENCE and --sequence SEQUENCE"
            ),
            (["events", "tail", "--count", "0"], "--count expects a positive number, got \"0\""),
            (["events", "verify", "--from", "-1"], "--from expects a feed position, got \"-1\""),
            (["events", "verify", "--json"], "unknown option --json for events verify"),
            (["events", "verify", "12"], "unexpected argument \"12\" for events verify"),
        ])
    func usage(arguments: [String], message: String) {
        #expect(throws: SubctlError(.usage, message)) {
            try SubctlCommand.parse(
                arguments.count > 1 && arguments[1] == "--addr" ? arguments : arguments + ["--addr", "h:1"])
        }
        #expect(throws: SubctlError(.usage, "events needs list, tail, dead, replay, test or verify")) {
            try SubctlCommand.parse(["events"])
        }
    }

    /// Runs `arguments` against `transport`: what it printed, and the error it ended with.
    func outcome(_ arguments: [String], _ transport: some BytesTransport) async -> (
        lines: [String], error: SubctlError?
    ) {
        let output = Mutex<[String]>([])
        let runner = CommandRunner { text in output.withLock { $0.append(text) } }
        do {
            try await runner.run(
                try SubctlCommand.parse(arguments + ["--addr", "127.0.0.1:7002"]), transport: transport,
                standardInput: { "" })
            return (output.withLock { $0 }, nil)
        } catch {
            return (output.withLock { $0 }, error)
        }
    }

    /// Changes 1 to 3 of `EventLogAuditTests` (a purchase; a renewal and renewal turned off; a
    /// link with no event of its own), and the log they give, with an access and a test event.
    static let changes = Array(EventLogAuditTests.changes.prefix(3))
    static let completeLog = EventLogAuditTests.complete.filter { $0.position <= 3 }

    @Test(
        "events verify reads where computation stands, every page of the log and the feed up to there: nothing missing")
    func verifyComplete() async throws {
        let transport = EventLogTransport(
            Self.completeLog, changes: Self.changes,
            state: GetEventStateResponse(started: true, throughFeedPosition: 3))
        #expect(
            try await run(["events", "verify"], transport) == [
                "checked 3 changes and 3 lifecycle events after feed position 0 through 3:"
                    + " nothing missing, doubled or unexpected"
            ])
        #expect(
            transport.methods.withLock { $0 } == [
                "subscriptions.ledger.v1.Ledger/GetEventState", "subscriptions.ledger.v1.Ledger/GetFeedPosition",
                "subscriptions.ledger.v1.Ledger/ListEvents", "subscriptions.ledger.v1.Ledger/ListEvents",
                "subscriptions.ledger.v1.Ledger/WatchChanges",
            ])
    }

    @Test(
        "events verify prints each problem with its position, id and sequences and exits with status 3; --from narrows the range"
    )
    func verifyProblems() async throws {
        var log = Self.completeLog
        // evt_2_1 lost; evt_1_0 logged again; a third event of change 2, which gives two.
        log.removeAll { $0.id == "evt_2_1" }
        log.append(Event(id: "evt_1_0", type: "subscription.purchased", position: 1, sequence: 7))
        log.append(Event(id: "evt_2_2", type: "subscription.renewed", position: 2, sequence: 8))
        let transport = EventLogTransport(
            log, changes: Self.changes, state: GetEventStateResponse(started: true, throughFeedPosition: 3))
        let missing = "missing: position 2 evt_2_1 (subscription.renewal_disabled) is not in the log"
        let unexpected =
            "unexpected: position 2 evt_2_2 is logged at #8 as subscription.renewed; the feed gives no such event"
        var (lines, error) = await outcome(["events", "verify"], transport)
        #expect(
            lines == [
                "checked 3 changes and 4 lifecycle events after feed position 0 through 3:"
                    + " 1 missing, 1 doubled, 1 unexpected",
                "doubled: position 1 evt_1_0 (subscription.purchased) is logged 2 times, at #1 #7",
                missing, unexpected,
            ])
        #expect(error?.code == .inconsistent && error?.code.exitCode == 3)
        #expect(
            error?.message
                == "the event log does not hold each change's lifecycle events exactly once (positions 1, 2)")
        // After position 1: the repeat of change 1's event is outside the range.
        (lines, error) = await outcome(["events", "verify", "--from", "1"], transport)
        #expect(
            lines == [
                "checked 2 changes and 2 lifecycle events after feed position 1 through 3:"
                    + " 1 missing, 0 doubled, 1 unexpected",
                missing, unexpected,
            ])
        #expect(error?.message.hasSuffix("(positions 2)") == true)
        // After position 2: change 3, which gives no events, alone.
        #expect(
            try await run(["events", "verify", "--from", "2"], transport) == [
                "checked 1 change and 0 lifecycle events after feed position 2 through 3:"
                    + " nothing missing, doubled or unexpected"
            ])
    }

    @Test(
        "events verify: a log not yet started is said so, nothing checked; a cursor beyond the feed is read up to the feed's end; a feed that ends early is incomplete"
    )
    func verifyEdges() async throws {
        let notStarted = EventLogTransport([], changes: Self.changes)
        #expect(try await run(["events", "verify"], notStarted) == ["the event log has not started: nothing checked"])
        #expect(notStarted.methods.withLock { $0 } == ["subscriptions.ledger.v1.Ledger/GetEventState"])
        // A cursor beyond the feed (a restored backup): the stream would wait there for ever.
        let beyond = EventLogTransport(
            Self.completeLog, changes: Self.changes,
            state: GetEventStateResponse(started: true, throughFeedPosition: 9))
        #expect(
            try await run(["events", "verify"], beyond) == [
                "checked 3 changes and 3 lifecycle events after feed position 0 through 3:"
                    + " nothing missing, doubled or unexpected"
            ])
        // No change at the position (a gap in the feed): the stream is left at the first one after it.
        let gap = EventLogTransport(
            Self.completeLog, changes: Array(Self.changes.prefix(2)) + [Change(position: 5)],
            state: GetEventStateResponse(started: true, throughFeedPosition: 3))
        #expect(
            try await run(["events", "verify"], gap) == [
                "checked 2 changes and 3 lifecycle events after feed position 0 through 3:"
                    + " nothing missing, doubled or unexpected"
            ])
        // The feed ends (the connection closed) before the position: nothing is concluded.
        let ended = EventLogTransport(
            Self.completeLog, changes: Array(Self.changes.prefix(2)),
            state: GetEventStateResponse(started: true, throughFeedPosition: 3), newest: 3)
        let (lines, error) = await outcome(["events", "verify"], ended)
        #expect(lines.isEmpty)
        #expect(error == SubctlError(.incomplete, "the feed ended at position 2, before 3: nothing concluded"))
    }
}
