import Foundation
import LedgerService
import Model
import TestSupport
import Testing
import Wire

/// The event log, the announced access and leases, on every engine.
@Suite("Ledger: the event log and leases")
struct LedgerEventLogTests {
    static let engines = LedgerEngine.available
    static let key = SubscriptionKey.apple("3001")

    static func lease(_ ledger: Ledger, _ owner: String, ttl: Int64 = 10_000) async throws -> AcquireLeaseResponse {
        try await ledger.cursors.acquireLease(
            AcquireLeaseRequest(name: Ledger.eventsLease, owner: owner, ttlMilliseconds: ttl))
    }

    static func access(
        _ id: String, _ type: String, account: String, capability: String = "pro", until: Int64? = nil,
        position: UInt64, reason: String? = nil
    ) -> Event {
        Event(
            id: id, type: type, accountID: account, key: key, position: position, capability: capability,
            accessUntilMilliseconds: until, reason: reason)
    }

    @Test(
        "a page of the log also ends at the page bytes: last_sequence is the last event given, and the next page goes on from there",
        arguments: engines)
    func pageBytes(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            #expect(try await Self.lease(ledger, "instance-a").held)
            // Twenty events of about 40 KB each (a state with 256 periods).
            let state = Subscription.large(Self.key)
            let events = (1...20).map { n in
                Event(
                    id: "evt_\(n)_0", type: "subscription.renewed", accountID: "a", key: Self.key, position: UInt64(n),
                    subscription: state)
            }
            let size = events[0].serialized().count
            #expect(size > 30_000 && size < 60_000)
            for batch in [events.prefix(10), events.suffix(10)] {
                _ = try await ledger.eventLog.appendEvents(
                    AppendEventsRequest(owner: "instance-a", events: Array(batch), throughFeedPosition: 20))
            }
            var pages: [[UInt64]] = []
            var after: UInt64 = 0
            while true {
                let page = try await ledger.eventLog.listEvents(ListEventsRequest(afterSequence: after, limit: 1000))
                guard !page.events.isEmpty else { break }
                pages.append(page.events.map(\.sequence))
                #expect(page.lastSequence == page.events.last?.sequence)
                after = page.lastSequence
            }
            let perPage = 262_144 / size
            #expect(pages.flatMap { $0 } == Array(1...20))
            #expect(pages.count == (20 + perPage - 1) / perPage && pages[0].count == perPage)
        }
    }

    @Test(
        "dead letters are listed by endpoint then sequence, a page at a time; a token not issued is refused",
        arguments: engines)
    func deadLetterPages(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            for (endpoint, sequences) in [("crm", [2, 4]), ("audit", [1, 2, 3])] {
                let lease = try await ledger.cursors.acquireLease(
                    AcquireLeaseRequest(name: "webhook.\(endpoint)", owner: "deliverer", ttlMilliseconds: 10_000))
                #expect(lease.held)
                _ = try await ledger.eventLog.recordDeliveries(
                    RecordDeliveriesRequest(
                        endpoint: endpoint, owner: "deliverer", deliveredThrough: 4,
                        attempts: sequences.map { sequence in
                            DeliveryAttempt(
                                sequence: UInt64(sequence), attempts: 3, lastStatus: 503,
                                deadMilliseconds: clock.now,
                                event: Event(id: "e\(sequence)", type: "subscription.renewed", position: 1))
                        }))
            }
            func pages(_ request: ListDeadLettersRequest) async throws -> [[String]] {
                var request = request
                var pages: [[String]] = []
                while true {
                    let page = try await ledger.eventLog.deadLetters(request)
                    pages.append(page.deadLetters.map { "\($0.endpoint) \($0.attempt?.event?.id ?? "-")" })
                    guard let token = page.nextPageToken else { return pages }
                    request.pageToken = token
                }
            }
            #expect(
                try await pages(ListDeadLettersRequest(limit: 2)) == [
                    ["audit e1", "audit e2"], ["audit e3", "crm e2"], ["crm e4"],
                ])
            #expect(try await pages(ListDeadLettersRequest(endpoint: "crm", limit: 1)) == [["crm e2"], ["crm e4"]])
            #expect(
                try await pages(ListDeadLettersRequest()) == [["audit e1", "audit e2", "audit e3", "crm e2", "crm e4"]])
            await #expect(
                throws: LedgerError.notFound(
                    "no webhook endpoint \"crn\" has delivery state here (an endpoint has it once the entitlement "
                        + "service has delivered to it); endpoints: audit, crm")
            ) {
                _ = try await ledger.eventLog.deadLetters(ListDeadLettersRequest(endpoint: "crn"))
            }
            await #expect(throws: LedgerError.invalidArgument("page_token \"crm\" is not one this ledger issued")) {
                _ = try await ledger.eventLog.deadLetters(ListDeadLettersRequest(pageToken: "crm"))
            }
            await #expect(throws: LedgerError.invalidArgument("endpoint must be 1 to 64 of a-z, 0-9, _ and -")) {
                _ = try await ledger.eventLog.deadLetters(ListDeadLettersRequest(pageToken: "2:CRM"))
            }
        }
    }

    @Test("leases run on the machine's clock: a jump of the time the ledger decides at does not end one")
    func leasesOnTheMachinesClock() async throws {
        let (database, remove) = try await LedgerEngine.sqlite.open()
        defer { remove() }
        let decided = TestClock()
        let machine = TestClock()
        let ledger = Ledger(database: database, now: { decided.now }, leaseNow: { machine.now })
        let first = try await Self.lease(ledger, "instance-a")
        #expect(first.held && first.expiresMilliseconds == machine.now + 10_000)
        // A simulated month passes in an instant: the lease and the appends under it go on.
        decided.advance(by: 31 * 86_400_000)
        _ = try await ledger.eventLog.appendEvents(
            AppendEventsRequest(owner: "instance-a", events: [], throughFeedPosition: 0))
        #expect(!(try await Self.lease(ledger, "instance-b")).held)
        // The machine's ten seconds end it.
        machine.advance(by: 10_000)
        #expect(try await Self.lease(ledger, "instance-b").held)
        await database.close()
    }

    @Test(
        "a lease is held by one owner until it expires; its holder renews it, another takes it after",
        arguments: engines)
    func leases(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let first = try await Self.lease(ledger, "instance-a")
            #expect(first.held && first.owner == "instance-a" && first.expiresMilliseconds == clock.now + 10_000)
            let refused = try await Self.lease(ledger, "instance-b")
            #expect(
                !refused.held && refused.owner == "instance-a"
                    && refused.expiresMilliseconds == first.expiresMilliseconds)
            clock.advance(by: 5000)
            let renewed = try await Self.lease(ledger, "instance-a")
            #expect(renewed.held && renewed.expiresMilliseconds == clock.now + 10_000)
            clock.advance(by: 10_000)
            let taken = try await Self.lease(ledger, "instance-b")
            #expect(taken.held && taken.owner == "instance-b")
            let late = try await Self.lease(ledger, "instance-a")
            #expect(!late.held && late.owner == "instance-b")
            await #expect(throws: LedgerError.invalidArgument("ttl_ms 500 is not between 1000 and 60000")) {
                _ = try await Self.lease(ledger, "instance-a", ttl: 500)
            }
        }
    }

    @Test(
        "appends need the lease; each id is logged once, in order; access events keep the announced access",
        arguments: engines)
    func appends(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let events = [
                Event(id: "evt_5_0", type: "subscription.purchased", accountID: "a", key: Self.key, position: 5),
                Self.access("evt_5_granted_1", "access.granted", account: "a", until: 1_800_000_000_000, position: 5),
                Self.access("evt_6_granted_2", "access.granted", account: "b", capability: "extra", position: 6),
            ]
            await #expect(
                throws: LedgerError.failedPrecondition("the events lease is not held: take it with AcquireLease first")
            ) {
                _ = try await ledger.eventLog.appendEvents(
                    AppendEventsRequest(owner: "x", events: events, throughFeedPosition: 6))
            }
            #expect(try await Self.lease(ledger, "x").held)
            var appended = try await ledger.eventLog.appendEvents(
                AppendEventsRequest(owner: "x", events: events, throughFeedPosition: 6))
            #expect(appended.appended == 3 && appended.lastSequence == 3)
            // Again, after a crash between the append and its answer: nothing twice.
            appended = try await ledger.eventLog.appendEvents(
                AppendEventsRequest(owner: "x", events: Array(events.suffix(2)), throughFeedPosition: 6))
            #expect(appended.appended == 0 && appended.lastSequence == 3)
            var state = try await ledger.eventLog.eventState(GetEventStateRequest())
            #expect(state.started && state.throughFeedPosition == 6)
            #expect(state.announced.map(\.accountID) == ["a", "b"])
            #expect(
                state.announced.first?.untilMilliseconds == 1_800_000_000_000 && state.announced.first?.key == Self.key)
            // An extension moves the end; an end withdraws it.
            _ = try await ledger.eventLog.appendEvents(
                AppendEventsRequest(
                    owner: "x",
                    events: [
                        Self.access(
                            "evt_7_extended_1", "access.extended", account: "a", until: 1_900_000_000_000, position: 7),
                        Self.access(
                            "evt_6_ended_2", "access.ended", account: "b", capability: "extra", position: 6,
                            reason: "expired"),
                    ], throughFeedPosition: 7))
            state = try await ledger.eventLog.eventState(GetEventStateRequest())
            #expect(state.throughFeedPosition == 7 && state.announced.count == 1)
            #expect(
                state.announced.first?.untilMilliseconds == 1_900_000_000_000 && state.announced.first?.position == 7)
            // Another owner, once it holds the lease, goes on; the first may not append any more.
            clock.advance(by: 20_000)
            // Expired and not yet taken: the owner is told its lease ran out, and when.
            await #expect {
                _ = try await ledger.eventLog.appendEvents(
                    AppendEventsRequest(owner: "x", events: [], throughFeedPosition: 8))
            } throws: { error in
                guard case LedgerError.failedPrecondition(let message) = error else { return false }
                return message.hasPrefix("the events lease of x expired at ")
                    && message.hasSuffix(": take it again with AcquireLease")
            }
            #expect(try await Self.lease(ledger, "y").held)
            await #expect(throws: LedgerError.failedPrecondition("the events lease is held by y, not by x")) {
                _ = try await ledger.eventLog.appendEvents(
                    AppendEventsRequest(owner: "x", events: [], throughFeedPosition: 8))
            }
            // A lower position leaves the cursor where it is.
            _ = try await ledger.eventLog.appendEvents(
                AppendEventsRequest(owner: "y", events: [], throughFeedPosition: 3))
            #expect(try await ledger.eventLog.eventState(GetEventStateRequest()).throughFeedPosition == 7)
        }
    }

    @Test(
        "ListEvents: after a sequence, a limit on the events answered, chosen types; bad patterns are refused",
        arguments: engines)
    func listing(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            #expect(try await Self.lease(ledger, "x").held)
            let types = [
                "subscription.purchased", "access.granted", "subscription.renewed", "access.ended", "grant.created",
            ]
            let events = types.enumerated().map { index, type in
                type.hasPrefix("access.")
                    ? Self.access("evt_\(index)", type, account: "a", position: UInt64(index + 1))
                    : Event(id: "evt_\(index)", type: type, accountID: "a", key: Self.key, position: UInt64(index + 1))
            }
            _ = try await ledger.eventLog.appendEvents(
                AppendEventsRequest(owner: "x", events: events, throughFeedPosition: 5))
            let all = try await ledger.eventLog.listEvents(ListEventsRequest())
            #expect(all.events.map(\.type) == types && all.events.map(\.sequence) == [1, 2, 3, 4, 5])
            #expect(all.lastSequence == 5 && all.events.map(\.id) == events.map(\.id))
            let page = try await ledger.eventLog.listEvents(ListEventsRequest(afterSequence: 1, limit: 2))
            #expect(page.events.map(\.sequence) == [2, 3] && page.lastSequence == 3)
            // With types, the limit counts matching events: those passed over do not use it up.
            let access = try await ledger.eventLog.listEvents(
                ListEventsRequest(afterSequence: 0, limit: 2, types: ["access.*"]))
            #expect(access.events.map(\.sequence) == [2, 4] && access.lastSequence == 4)
            let first = try await ledger.eventLog.listEvents(
                ListEventsRequest(afterSequence: 0, limit: 1, types: ["grant.created"]))
            #expect(first.events.map(\.sequence) == [5] && first.lastSequence == 5)
            let rest = try await ledger.eventLog.listEvents(
                ListEventsRequest(afterSequence: 3, types: ["access.*", "grant.created"]))
            #expect(rest.events.map(\.type) == ["access.ended", "grant.created"] && rest.lastSequence == 5)
            let none = try await ledger.eventLog.listEvents(ListEventsRequest(afterSequence: 5))
            #expect(none.events.isEmpty && none.lastSequence == 5)
            // A test event goes at the end, without the lease.
            let test = try await ledger.eventLog.logTestEvent(LogTestEventRequest(accountID: "a"))
            #expect(
                test.type == "test" && test.id.hasPrefix("evt_test_") && test.sequence == 6 && test.accountID == "a")
            #expect(try await ledger.eventLog.listEvents(ListEventsRequest(afterSequence: 5)).events == [test])
            await #expect(
                throws: LedgerError.invalidArgument(
                    "types[0] \"renewed\" is not an event type or a prefix with .* (subscription.*)")
            ) {
                _ = try await ledger.eventLog.listEvents(ListEventsRequest(types: ["renewed"]))
            }
        }
    }

    @Test(
        "a deletion rewrites the logged events that name the account and forgets its announced access",
        arguments: engines)
    func deletion(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            #expect(try await Self.lease(ledger, "x").held)
            var subscription = LedgerConformanceTests.state(Self.key, .active, storeTime: 1)
            subscription.accountID = "carol"
            subscription.storeAccountRef = "ref-carol"
            _ = try await ledger.eventLog.appendEvents(
                AppendEventsRequest(
                    owner: "x",
                    events: [
                        Event(
                            id: "evt_1_0", type: "subscription.purchased", accountID: "carol", key: Self.key,
                            position: 1,
                            subscription: subscription),
                        Self.access("evt_1_granted", "access.granted", account: "carol", position: 1),
                        Self.access("evt_2_granted", "access.granted", account: "dave", position: 2),
                    ], throughFeedPosition: 2))
            _ = try await ledger.accounts.deleteAccount(DeleteAccountRequest(accountID: "carol"), actor: "privacy")
            let logged = try await ledger.eventLog.listEvents(ListEventsRequest()).events
            #expect(logged.map(\.id) == ["evt_1_0", "evt_1_granted", "evt_2_granted"])
            #expect(logged[0].accountID == nil && logged[0].subscription?.accountID == nil)
            #expect(logged[0].subscription?.storeAccountRef == "ref-carol")  // not linked: not the account's reference
            #expect(logged[1].accountID == nil && logged[2].accountID == "dave")
            let state = try await ledger.eventLog.eventState(GetEventStateRequest())
            #expect(state.announced.map(\.accountID) == ["dave"])
        }
    }
}
