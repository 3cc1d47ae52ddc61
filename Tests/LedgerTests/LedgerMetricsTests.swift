import Foundation
import Model
import Observability
import RPC
import Testing
import Wire

@testable import LedgerService

@Suite("Ledger metrics")
struct LedgerMetricsTests {
    static let engines = LedgerEngine.available

    /// The backlog families as a scrape at the ledger's time writes them.
    static func page(_ backlog: LedgerBacklogMetrics, _ ledger: Ledger) async throws -> MetricsRegistry {
        let reading = try await backlog.read()
        let registry = MetricsRegistry()
        registry.addCollector { text in LedgerBacklogMetrics.write(reading, now: ledger.now(), into: &text) }
        return registry
    }

    @Test(
        "the inbox backlog by store and the Google acknowledgements owed: how many, and how old the oldest",
        arguments: engines)
    func backlog(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let backlog = LedgerBacklogMetrics(ledger: ledger)
            var page = try await Self.page(backlog, ledger)
            #expect(page.value(#"ledger_inbox_pending{store="apple"}"#) == 0)
            #expect(page.value(#"ledger_inbox_oldest_pending_age_seconds{store="google"}"#) == 0)
            #expect(page.value("google_acknowledgements_pending") == 0)
            #expect(page.value("google_acknowledgement_oldest_pending_age_seconds") == 0)

            func record(_ store: Store, _ id: String, type: String = "DID_RENEW") async throws {
                _ = try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(
                        entry: InboxEntry(
                            store: store, environment: .production, notificationID: id, notificationType: type)))
            }
            try await record(.apple, "a1")
            clock.advance(by: 2_000)
            try await record(.apple, "a2")
            try await record(.google, "ack-0123", type: "ACKNOWLEDGE")
            clock.advance(by: 500)
            try await record(.google, "g1", type: "SUBSCRIPTION_PURCHASED")
            _ = try await ledger.inbox.markInbox(
                MarkInboxRequest(store: .google, notificationID: "g1", status: .failed, error: "503"))
            clock.advance(by: 10_000)
            page = try await Self.page(backlog, ledger)
            #expect(page.value(#"ledger_inbox_pending{store="apple"}"#) == 2)
            #expect(page.value(#"ledger_inbox_oldest_pending_age_seconds{store="apple"}"#) == 12.5)
            // A failed notification is still owed processing.
            #expect(page.value(#"ledger_inbox_pending{store="google"}"#) == 1)
            #expect(page.value(#"ledger_inbox_oldest_pending_age_seconds{store="google"}"#) == 10)
            #expect(page.value("google_acknowledgements_pending") == 1)
            #expect(page.value("google_acknowledgement_oldest_pending_age_seconds") == 10.5)

            for (store, id) in [(Store.apple, "a1"), (.google, "ack-0123")] {
                _ = try await ledger.inbox.markInbox(
                    MarkInboxRequest(store: store, notificationID: id, status: .processed))
            }
            page = try await Self.page(backlog, ledger)
            #expect(page.value(#"ledger_inbox_pending{store="apple"}"#) == 1)
            #expect(page.value(#"ledger_inbox_oldest_pending_age_seconds{store="apple"}"#) == 10.5)
            #expect(page.value("google_acknowledgements_pending") == 0)
            #expect(page.value("google_acknowledgement_oldest_pending_age_seconds") == 0)
        }
    }

    @Test("a scrape reads the backlog through the ledger's storage, blocking for it", arguments: engines)
    func scrape(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            _ = try await ledger.inbox.recordNotification(
                RecordNotificationRequest(
                    entry: InboxEntry(
                        store: .google, environment: .production, notificationID: "ack-1",
                        notificationType: "ACKNOWLEDGE")
                ))
            clock.advance(by: 3_000)
            let registry = MetricsRegistry()
            // A bound no read reaches, however loaded the machine: the reading is this one's.
            let backlog = LedgerBacklogMetrics(ledger: ledger, readTimeout: .seconds(600))
            registry.addCollector { text in backlog.write(into: &text) }
            // Off the cooperative pool, as the HTTP server's threads are.
            let value = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    continuation.resume(returning: registry.value("google_acknowledgement_oldest_pending_age_seconds"))
                }
            }
            #expect(value == 3)
        }
    }

    @Test("a claim of another account's subscription counts by what the policy made of it, once, when committed")
    func linkConflicts() async throws {
        try await LedgerEngine.sqlite.withLedger { ledger, clock in
            let registry = MetricsRegistry()
            let router = RPCRouter()
            LedgerMethods.register(on: router, ledger: ledger, metrics: registry)
            let transport = InProcessTransport(server: try RPCServer(configuration: .init(), router: router))
            let key = SubscriptionKey.apple("2000000777")
            _ = try await ledger.verifiedStates.recordVerifiedState(
                LedgerConformanceTests.record("s", LedgerConformanceTests.state(key, .active, storeTime: clock.now)))
            func link(_ account: String, _ policy: TransferPolicy, _ idempotencyKey: String) async throws {
                let _: LinkAccountResponse = try await transport.call(
                    LedgerRPC.linkAccount,
                    LinkAccountRequest(idempotencyKey: idempotencyKey, key: key, accountID: account, policy: policy))
            }
            func conflicts(_ outcome: String) -> Double? {
                registry.value(#"account_link_conflicts_total{outcome="\#(outcome)"}"#)
            }
            try await link("alice", .transfer, "l1")
            #expect([conflicts("transferred"), conflicts("kept"), conflicts("refused")] == [0, 0, 0])
            try await link("bob", .keep, "l2")
            #expect(conflicts("kept") == 1)
            try await link("bob", .refuse, "l3")
            #expect(conflicts("refused") == 1)
            try await link("bob", .transfer, "l4")
            #expect(conflicts("transferred") == 1)
            // The same request again is answered from the ledger's record: no new claim.
            try await link("bob", .transfer, "l4")
            #expect([conflicts("transferred"), conflicts("kept"), conflicts("refused")] == [1, 1, 1])
        }
    }
}
