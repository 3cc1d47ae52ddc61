import EntitlementService
import Foundation
import HTTP
import Model
import Observability
import RPC
import SQLite
import Synchronization
import TestSupport
import Testing
import Wire

/// Webhook delivery from the event log of a real ledger to a real HTTP receiver in this process,
/// with a clock the test sets: signatures, per-account order, retries, a dead letter, 410, and
/// a second deliverer that resumes after the first one stopped.
@Suite("End to end: webhook delivery")
struct WebhookDeliveryTests {
    static let secret = "whsec_" + Data((0..<32).map { UInt8(255 - $0) }).base64EncodedString()

    final class Clock: Sendable {
        let value = Mutex<Int64>(1_790_000_000_000)
        var now: Int64 { value.withLock { $0 } }
        func advance(by milliseconds: Int64) { value.withLock { $0 += milliseconds } }
    }

    static func append(_ stack: EntitlementStack, _ events: [(String, String)]) async throws {
        let lease: AcquireLeaseResponse = try await stack.ledgerClient.call(
            LedgerRPC.acquireLease, AcquireLeaseRequest(name: "events", owner: "writer", ttlMilliseconds: 60_000))
        try #require(lease.held)
        let _: AppendEventsResponse = try await stack.ledgerClient.call(
            LedgerRPC.appendEvents,
            AppendEventsRequest(
                owner: "writer",
                events: events.map { id, account in
                    Event(id: id, type: "subscription.renewed", accountID: account, position: 1)
                }, throughFeedPosition: 1))
    }

    static func endpoint(_ url: URL) throws -> WebhookEndpoint {
        try #require(
            try WebhookEndpoints.parse(
                Array(#"{"endpoints": [{"name": "crm", "url": "\#(url)", "secrets": ["\#(secret)"]}]}"#.utf8)
            ).first)
    }

    static func deliverer(
        _ stack: EntitlementStack, _ receiver: WebhookReceiver, owner: String, clock: Clock,
        maxAge: Int64 = 10_000, url: URL? = nil, timeout: TimeInterval = 10, maxInFlight: Int = 4,
        metrics: MetricsRegistry? = nil
    ) throws -> WebhookDeliverer {
        let endpoint = try Self.endpoint(url ?? receiver.url)
        var rules = DeliveryRules()
        rules.maxInFlight = maxInFlight
        rules.baseBackoff = 1000
        rules.maxAge = maxAge
        rules.timeout = timeout
        return WebhookDeliverer(
            endpoint: endpoint, client: stack.ledgerClient, owner: owner, leaseMilliseconds: 3000, rules: rules,
            logger: Logger(service: owner, sink: .capturing()), metrics: metrics, now: { clock.now }, random: { 0.5 })
    }

    /// Delivery rounds until `done` holds (at most 30 s: a loaded machine is slow, not wrong).
    static func rounds(_ deliverer: WebhookDeliverer, _ what: String, until done: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !done() {
            guard ContinuousClock.now < deadline else {
                Issue.record("never: \(what)")
                return
            }
            // The lease expires on the ledger's real clock: renewed as the service does.
            await deliverer.renewLease()
            await deliverer.step()
            try await Task.sleep(for: .milliseconds(5))
        }
        // The answers' progress is recorded by the next round, under a lease renewed as the
        // service does (the answers may outlast it on a loaded machine).
        while await deliverer.inFlightCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
        await deliverer.renewLease()
        await deliverer.step()
    }

    /// Runs `body` with a ledger and the services' stack, a receiver (answering 200) and a clock;
    /// stops the receiver and the stack afterwards, whatever happened.
    static func withReceiver(_ body: (EntitlementStack, WebhookReceiver, Clock) async throws -> Void) async throws {
        let stack = try await EntitlementStack()
        let receiver: WebhookReceiver
        do {
            receiver = try WebhookReceiver(secret: Self.secret)
        } catch {
            await stack.stop()
            throw error
        }
        try await receiver.run(beside: stack) { try await body(stack, receiver, Clock()) }
    }

    static func state(_ stack: EntitlementStack) async throws -> GetDeliveryStateResponse {
        try await stack.ledgerClient.call(LedgerRPC.getDeliveryState, GetDeliveryStateRequest(endpoint: "crm"))
    }

    /// Renews and steps `deliverer` until it holds the endpoint's lease (another's expires within
    /// three seconds on the ledger's clock); false when it never did.
    static func takeOver(_ deliverer: WebhookDeliverer) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while await !deliverer.isDelivering, ContinuousClock.now < deadline {
            await deliverer.renewLease()
            await deliverer.step()
            if await deliverer.isDelivering { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return await deliverer.isDelivering
    }

    @Test(
        "more dead letters at once than one record carries: the position recorded stops before the first left out, and the deliverer that takes over gives those up again; none is lost"
    )
    func manyDeadLetters() async throws {
        try await Self.withReceiver { stack, receiver, clock in
            receiver.set(503)
            // 1,201 events of as many accounts, none waiting for another.
            let events = (1...1201).map { ("e\($0)", "acct-\($0)") }
            try await Self.append(stack, Array(events.prefix(1000)))
            try await Self.append(stack, Array(events.dropFirst(1000)))
            let first = try Self.deliverer(stack, receiver, owner: "deliverer-1", clock: clock, maxInFlight: 16)
            await first.renewLease()
            try await Self.rounds(first, "every first attempt") { receiver.count == 1201 }
            // The ledger takes no record while every second attempt fails past the longest wait:
            // 1,201 dead letters wait to be recorded.
            let file = try SQLiteDatabase(path: stack.directory.appendingPathComponent("ledger.sqlite").path)
            try file.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON webhook_attempts BEGIN SELECT RAISE(ABORT, 'no record'); END")
            clock.advance(by: 11_000)
            try await Self.rounds(first, "every last attempt") { receiver.count == 2402 }
            let dead = "SELECT count(*) AS n FROM webhook_attempts WHERE dead_ms IS NOT NULL"
            #expect(try file.query(dead).int64(0, "n") == 0)
            // Then it takes the first record (1,000 dead letters) and none after it.
            try file.execute("DROP TRIGGER refuse")
            try file.execute(
                """
                CREATE TRIGGER refuse BEFORE INSERT ON webhook_attempts
                WHEN (SELECT count(*) FROM webhook_attempts WHERE dead_ms IS NOT NULL) >= 1000
                BEGIN SELECT RAISE(ABORT, 'no record'); END
                """)
            await first.step()
            #expect(try file.query(dead).int64(0, "n") == 1000)
            #expect(try await Self.state(stack).deliveredThrough == 1000)
            // The first deliverer dies; the ledger mends; another takes over from 1,000 and gives
            // the rest up again (their first attempts were recorded, so they are past the wait).
            try file.execute("DROP TRIGGER refuse")
            let second = try Self.deliverer(stack, receiver, owner: "deliverer-2", clock: clock, maxInFlight: 16)
            #expect(try await Self.takeOver(second))
            try await Self.rounds(second, "the rest given up") { receiver.count == 2603 }
            #expect(try await Self.state(stack).deliveredThrough == 1201)
            #expect(try file.query(dead).int64(0, "n") == 1201)
            #expect(Set(receiver.all.map(\.id)).count == 1201)
            // An operator reads them all, a page at a time.
            var letters: [DeadLetter] = []
            var request = ListDeadLettersRequest(endpoint: "crm", limit: 500)
            while true {
                let page: ListDeadLettersResponse = try await stack.ledgerClient.call(
                    LedgerRPC.listDeadLetters, request)
                letters += page.deadLetters
                guard let token = page.nextPageToken else { break }
                request.pageToken = token
            }
            #expect(letters.map { $0.attempt?.sequence ?? 0 } == Array(1...1201))
            #expect(letters.allSatisfy { $0.endpoint == "crm" && $0.attempt?.event?.id == "e\($0.attempt!.sequence)" })
            request.pageToken = "1000"
            await #expect(throws: RPCError(.invalidArgument, "page_token \"1000\" is not one this ledger issued")) {
                let _: ListDeadLettersResponse = try await stack.ledgerClient.call(LedgerRPC.listDeadLetters, request)
            }
        }
    }

    @Test(
        "signed, in order per account, retried with backoff, given up after the longest wait, stopped by 410, resumed by another deliverer"
    )
    func delivery() async throws {
        try await Self.withReceiver { stack, receiver, clock in
            try await Self.append(
                stack, [("e1", "a"), ("e2", "b"), ("e3", "a"), ("e4", "b"), ("e5", "a"), ("e6", "c")])
            let metrics = MetricsRegistry()
            func metric(_ name: String) -> Double? { metrics.value(name + #"{endpoint="crm"}"#) }
            let first = try Self.deliverer(stack, receiver, owner: "deliverer-1", clock: clock, metrics: metrics)
            await first.renewLease()
            try await Self.rounds(first, "six deliveries") { receiver.ok().count == 6 }
            #expect(metric("webhook_lag_seconds") == 0)
            #expect(metric("webhook_dead_letters") == 0 && metric("webhook_dead_letters_total") == 0)
            var got = receiver.ok()
            #expect(got.allSatisfy { $0.verified })
            #expect(Set(got.map(\.id)) == ["e1", "e2", "e3", "e4", "e5", "e6"])
            #expect(got.filter { $0.account == "a" }.map(\.id) == ["e1", "e3", "e5"])
            #expect(got.filter { $0.account == "b" }.map(\.id) == ["e2", "e4"])
            #expect(try await Self.state(stack).deliveredThrough == 6)

            // The receiver fails: both accounts' next events are retried; a's later one waits.
            receiver.set(500)
            try await Self.append(stack, [("e7", "a"), ("e8", "b"), ("e9", "a")])
            try await Self.rounds(first, "two failed attempts") { receiver.count == 8 }
            var state = try await Self.state(stack)
            #expect(state.deliveredThrough == 6 && state.retrying.map(\.sequence) == [7, 8])
            #expect(state.retrying.allSatisfy { $0.attempts == 1 && $0.lastStatus == 500 })
            #expect(state.retrying.first?.nextAttemptMilliseconds == clock.now + 1000)
            // Not before the backoff.
            receiver.set(200)
            clock.advance(by: 999)
            await first.step()
            #expect(receiver.count == 8)
            clock.advance(by: 1)
            try await Self.rounds(first, "the retries and the event that waited") { receiver.ok().count == 9 }
            try await Self.rounds(first, "the event that waited") { receiver.ok().count == 9 }
            got = receiver.ok()
            #expect(got.filter { $0.account == "a" }.map(\.id) == ["e1", "e3", "e5", "e7", "e9"])
            state = try await Self.state(stack)
            #expect(state.deliveredThrough == 9 && state.retrying.isEmpty)

            // Failing past the longest wait: a dead letter, and delivery goes on past it.
            receiver.set(503)
            try await Self.append(stack, [("e10", "b")])
            try await Self.rounds(first, "a failed attempt") { receiver.count == 12 }
            clock.advance(by: 11_000)
            try await Self.rounds(first, "the last attempt") { receiver.count == 13 }
            let dead: ListDeadLettersResponse = try await stack.ledgerClient.call(
                LedgerRPC.listDeadLetters, ListDeadLettersRequest(endpoint: "crm"))
            #expect(dead.deadLetters.map(\.attempt?.sequence) == [10])
            #expect(
                dead.deadLetters.first?.attempt?.attempts == 2 && dead.deadLetters.first?.attempt?.event?.id == "e10")
            #expect(try await Self.state(stack).deliveredThrough == 10)
            #expect(metric("webhook_dead_letters") == 1 && metric("webhook_dead_letters_total") == 1)

            // 410 Gone: the endpoint is disabled; nothing more goes until a replay.
            receiver.set(410)
            try await Self.append(stack, [("e11", "c")])
            try await Self.rounds(first, "the 410") { receiver.count == 14 }
            #expect(await first.isDisabled)
            #expect(try await Self.state(stack).disabledMilliseconds != nil)
            receiver.set(200)
            await first.step()
            #expect(receiver.count == 14)
            let replayed: GetDeliveryStateResponse = try await stack.ledgerClient.call(
                LedgerRPC.replayDeliveries, ReplayDeliveriesRequest(endpoint: "crm", afterSequence: 9))
            #expect(replayed.disabledMilliseconds == nil && replayed.deliveredThrough == 9)
            // A name with no delivery state (a typo) is refused and starts none.
            do {
                let _: GetDeliveryStateResponse = try await stack.ledgerClient.call(
                    LedgerRPC.replayDeliveries, ReplayDeliveriesRequest(endpoint: "crn", afterSequence: 0))
                Issue.record("a replay to an endpoint with no delivery state was accepted")
            } catch let error as RPCError {
                #expect(error.code == .notFound)
                #expect(error.message.hasSuffix("endpoints: crm"), "\(error.message)")
            }
            // The replay takes the dead letter out; the deliverer counts again within a minute.
            clock.advance(by: 60_000)
            // e10 and e11 are different accounts' events, sent side by side: either may land first.
            try await Self.rounds(first, "the replay") { Set(receiver.ok().suffix(2).map(\.id)) == ["e10", "e11"] }
            #expect(try await Self.state(stack).deliveredThrough == 11)
            #expect(metric("webhook_dead_letters") == 0 && metric("webhook_dead_letters_total") == 1)

            // Sent but not recorded (the deliverer dies at once): another one sends it again, same id.
            try await Self.append(stack, [("e12", "d")])
            await first.step()
            let sendDeadline = ContinuousClock.now + .seconds(30)
            while !receiver.ok().contains(where: { $0.id == "e12" }), ContinuousClock.now < sendDeadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let second = try Self.deliverer(stack, receiver, owner: "deliverer-2", clock: clock)
            #expect(try await Self.takeOver(second))
            try await Self.rounds(second, "the resend") { receiver.ok().filter { $0.id == "e12" }.count == 2 }
            #expect(try await Self.state(stack).deliveredThrough == 12)
            got = receiver.ok()
            // Duplicates only of what was not recorded, and with the same id.
            #expect(got.map(\.id).filter { $0 == "e12" }.count == 2)
            #expect(Set(got.map(\.id)).count == got.count - 1)  // e12 twice, nothing else
            #expect(receiver.all.allSatisfy { $0.verified })
        }
    }

    @Test(
        "one dead letter delivered again with a reason, while the deliverer runs: the receiver gets it once more, the other stays dead, the account's trail names the caller and the reason"
    )
    func redeliverOne() async throws {
        try await Self.withReceiver { stack, receiver, clock in
            try await Self.append(stack, [("r1", "a"), ("r2", "b")])
            let deliverer = try Self.deliverer(stack, receiver, owner: "deliverer-1", clock: clock)
            receiver.set(503)
            await deliverer.renewLease()
            try await Self.rounds(deliverer, "two failed attempts") { receiver.count == 2 }
            clock.advance(by: 11_000)
            try await Self.rounds(deliverer, "the last attempts") { receiver.count == 4 }
            let dead: ListDeadLettersResponse = try await stack.ledgerClient.call(
                LedgerRPC.listDeadLetters, ListDeadLettersRequest(endpoint: "crm"))
            #expect(dead.deadLetters.map(\.attempt?.sequence) == [1, 2])
            #expect(try await Self.state(stack).deliveredThrough == 2)

            receiver.set(200)
            let replayed: GetDeliveryStateResponse = try await stack.ledgerClient.call(
                LedgerRPC.replayDeliveries,
                ReplayDeliveriesRequest(endpoint: "crm", sequence: 2, reason: "the CRM lost b's renewal"))
            #expect(replayed.deliveredThrough == 2 && replayed.retrying.isEmpty)
            #expect(replayed.redelivering.map(\.sequence) == [2] && replayed.redelivering.first?.event?.id == "r2")
            // Not before the deliverer reads its state again (each minute).
            await deliverer.step()
            #expect(receiver.ok().isEmpty)
            clock.advance(by: 60_000)
            try await Self.rounds(deliverer, "the redelivery") { receiver.ok().map(\.id) == ["r2"] }
            let delivered = try #require(receiver.ok().first)
            #expect(delivered.verified && delivered.account == "b")
            #expect(try await Self.state(stack) == GetDeliveryStateResponse(deliveredThrough: 2))
            let left: ListDeadLettersResponse = try await stack.ledgerClient.call(
                LedgerRPC.listDeadLetters, ListDeadLettersRequest(endpoint: "crm"))
            #expect(left.deadLetters.map(\.attempt?.sequence) == [1])
            // Nothing else was sent: r1 stays a dead letter.
            #expect(receiver.count == 5)

            let history: GetHistoryResponse = try await stack.ledgerClient.call(
                LedgerRPC.getHistory, GetHistoryRequest(accountID: "b"))
            let audit = try #require(history.events.first)
            #expect(history.events.count == 1)
            #expect(audit.kind == .storeAction && audit.storeSubtype == "REDELIVER_WEBHOOK")
            #expect(audit.reason == "the CRM lost b's renewal" && audit.actor?.hasPrefix("address 127.0.0.1:") == true)
            #expect(
                audit.detail
                    == "webhook event r2 (subscription.renewed, sequence 2) put back for delivery to endpoint crm, "
                    + "given up on after 2 attempts")
            #expect(
                audit.accountID == "b"
                    && audit.key == SubscriptionKey(store: .promotional, environment: .production, storeID: ""))
        }
    }

    @Test("a replay after a position made while the deliverer runs is taken within a minute: what follows goes again")
    func replayWhileDelivering() async throws {
        try await Self.withReceiver { stack, receiver, clock in
            try await Self.append(stack, [("p1", "a"), ("p2", "b")])
            let deliverer = try Self.deliverer(stack, receiver, owner: "deliverer-1", clock: clock)
            await deliverer.renewLease()
            try await Self.rounds(deliverer, "two deliveries") { receiver.ok().count == 2 }
            #expect(try await Self.state(stack).deliveredThrough == 2)
            let replayed: GetDeliveryStateResponse = try await stack.ledgerClient.call(
                LedgerRPC.replayDeliveries, ReplayDeliveriesRequest(endpoint: "crm", afterSequence: 1))
            #expect(replayed.deliveredThrough == 1)
            await deliverer.step()
            #expect(receiver.count == 2)
            clock.advance(by: 60_000)
            try await Self.rounds(deliverer, "the replay") { receiver.ok().count == 3 }
            #expect(receiver.ok().map(\.id) == ["p1", "p2", "p2"] || receiver.ok().map(\.id) == ["p2", "p1", "p2"])
            #expect(try await Self.state(stack).deliveredThrough == 2)
        }
    }

    @Test("a receiver down for a simulated day, then too slow to answer, then back: retried all along, nothing lost")
    func downThenSlow() async throws {
        let down = try HeldPort()
        try await Self.withReceiver { stack, receiver, clock in
            try await Self.append(stack, [("f1", "a"), ("f2", "b")])
            let deliverer = try Self.deliverer(
                stack, receiver, owner: "deliverer-1", clock: clock, maxAge: 3 * 86_400_000,
                url: URL(string: "http://127.0.0.1:\(down.port)/hooks")!, timeout: 2)
            await deliverer.renewLease()
            // A day of refused connections, an hour apart (the backoff's longest wait).
            for _ in 0..<24 {
                await deliverer.renewLease()
                await deliverer.step()
                while await deliverer.inFlightCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
                clock.advance(by: 3_600_000)
            }
            await deliverer.step()
            while await deliverer.inFlightCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
            try await deliverer.record()
            var state = try await Self.state(stack)
            #expect(state.deliveredThrough == 0 && state.retrying.map(\.sequence) == [1, 2])
            #expect(state.retrying.allSatisfy { $0.lastStatus == 0 && $0.attempts >= 20 && $0.deadMilliseconds == nil })
            // Then at an address that answers, but slower than the deliverer waits.
            let slow = try WebhookReceiver(secret: Self.secret)
            slow.delay(milliseconds: 4000)
            await deliverer.update(try Self.endpoint(slow.url))
            clock.advance(by: 3_600_000)
            await deliverer.renewLease()
            await deliverer.step()
            while await deliverer.inFlightCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
            await deliverer.step()
            // The slow receiver got both (and answered too late): each one more attempt, timed out.
            // The second may reach it only once its handler is done holding back the first.
            let arrived = ContinuousClock.now + .seconds(15)
            while slow.count < 2, ContinuousClock.now < arrived { try await Task.sleep(for: .milliseconds(20)) }
            let before = state.retrying.map(\.attempts)
            state = try await Self.state(stack)
            #expect(slow.count == 2 && slow.all.allSatisfy { $0.verified })
            #expect(state.deliveredThrough == 0 && state.retrying.map(\.attempts) == before.map { $0 + 1 })
            #expect(state.retrying.allSatisfy { $0.lastStatus == 0 && $0.lastError == #"network("timed out")"# })
            slow.server.stop()
            // Back, and quick: both arrive, acknowledged once each.
            await deliverer.update(try Self.endpoint(receiver.url))
            clock.advance(by: 3_600_000)
            let deadline = ContinuousClock.now + .seconds(10)
            while try await Self.state(stack).deliveredThrough < 2, ContinuousClock.now < deadline {
                await deliverer.renewLease()
                await deliverer.step()
                while await deliverer.inFlightCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
                // A retry of an answer that came too late is due an hour on.
                clock.advance(by: 3_600_000)
            }
            let final = try await Self.state(stack)
            #expect(final.deliveredThrough == 2, "\(final) \(receiver.all.map { ($0.id, $0.status) })")
            #expect(receiver.all.allSatisfy { $0.verified })
            #expect(receiver.ok().map(\.id).sorted() == ["f1", "f2"])
        }
    }
}
