import Clients
import Foundation
import Model
import RPC
import Testing
import VerifierService
import Wire

@Suite("A notification's trace: from the verifier's endpoint to the ledger's inbox and events", .serialized)
struct NotificationTraceTests {
    static let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")
    static let given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    /// Delivers a SUBSCRIBED notification (with `traceparent` when given) and waits until it is
    /// processed; returns its inbox entry and the event it recorded.
    static func deliver(traceparent: String?) async throws -> (entry: InboxEntry, event: LifecycleEvent) {
        let harness = try await AppleAdapterHarness()
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(expiresIn: 30), renewal: harness.renewal(), status: 1))
        let payload = try harness.notification(
            uuid: "5d1c0d6e-1f3a-4c55-8f0b-6a1f0c7e2b12", type: "SUBSCRIBED", subtype: "INITIAL_BUY",
            transaction: harness.transaction(expiresIn: 30), renewal: harness.renewal())
        #expect(try await harness.deliver(payload, traceparent: traceparent).0 == 200)
        await harness.adapter.processingIdle()
        let entries = try await harness.ledger.listInbox(ListInboxRequest(status: .processed)).entries
        let events = try await harness.history(Self.key)
        await harness.stop()
        #expect(entries.count == 1 && events.count == 1)
        return (try #require(entries.first), try #require(events.first))
    }

    @Test(
        "the trace id of a notification's traceparent is kept with its inbox entry and the event its processing recorded"
    )
    func givenTrace() async throws {
        let (entry, event) = try await Self.deliver(traceparent: Self.given)
        #expect(entry.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(event.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(event.kind == .purchased && event.notificationID == entry.notificationID)
    }

    @Test(
        "a notification without a traceparent, or with an invalid one, starts a trace that its entry and event share",
        arguments: [nil, "00-00000000000000000000000000000000-b7ad6b7169203331-01", "not a traceparent"])
    func newTrace(traceparent: String?) async throws {
        let (entry, event) = try await Self.deliver(traceparent: traceparent)
        let traceID = try #require(entry.traceID)
        #expect(TraceContext.isTraceID(traceID))
        #expect(event.traceID == traceID)
    }
}
