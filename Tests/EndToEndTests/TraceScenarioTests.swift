import EntitlementService
import Foundation
import Model
import Observability
import RPC
import ServiceProcessKit
import Testing
import Wire

@Suite("End to end: one trace id from a caller through the ledger and the entitlement service to the webhook")
struct TraceScenarioTests {
    static let given = TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")!

    @Test(
        "a grant made under a caller's trace: the ledger's log line for the call, its event (history, FindTrace), the events logged from it and their webhook deliveries all carry the trace id"
    )
    func grantFollowed() async throws {
        let traceID = Self.given.traceID
        let receiver = try WebhookReceiver(secret: WebhookLifecycleTests.secret)
        let file = try WebhookLifecycleTests.endpointsFile(receiver)
        let stack = try await EntitlementStack(ledgerEnvironment: ["LOG_LEVEL": "debug"])
        try await receiver.run(beside: stack) {
            let (entitlement, client, _) = try await stack.startEntitlement(environment: [
                "EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000", "WEBHOOK_ENDPOINTS_FILE": file.path,
            ])
            let grant = try await TraceContext.$current.withValue(Self.given) {
                try await stack.ledgerClient.call(
                    LedgerRPC.grantEntitlement,
                    GrantEntitlementRequest(idempotencyKey: "g-trace", accountID: "acct-trace", capability: "pro"))
            }
            let line = try await stack.ledger.line(
                containing: #""method":"subscriptions.ledger.v1.Ledger/GrantEntitlement""#, within: 10)
            #expect(line.contains(#""trace_id":"\#(traceID)""#), "\(line)")
            let key = try #require(grant.grant?.key)
            let history = try await stack.ledgerClient.call(LedgerRPC.getHistory, GetHistoryRequest(key: key))
            #expect(history.events.map(\.traceID) == [traceID])
            let found = try await stack.ledgerClient.call(LedgerRPC.findTrace, FindTraceRequest(traceID: traceID))
            #expect(found.inboxEntries.isEmpty && found.events.map(\.kind) == [.grantCreated])
            let arrived = try await poll(within: .seconds(30)) { receiver.ok().count >= 2 }
            #expect(arrived, "\(receiver.all.count) deliveries")
            let delivered = receiver.ok()
            #expect(delivered.map(\.type) == ["grant.created", "access.granted"])
            for delivery in delivered {
                let body = try JSONSerialization.jsonObject(with: Data(delivery.body.utf8)) as? [String: Any]
                #expect(body?["traceId"] as? String == traceID)
                let header = try #require(delivery.headers["traceparent"])
                #expect(TraceContext(traceparent: header)?.traceID == traceID, "\(header)")
            }
            let logged = try await stack.ledgerClient.call(LedgerRPC.listEvents, ListEventsRequest(limit: 10))
            #expect(logged.events.map(\.traceID) == [traceID, traceID])
            entitlement.terminate()
            _ = await entitlement.waitForExit()
            client.shutdown()
        }
    }
}
