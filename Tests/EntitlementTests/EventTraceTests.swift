import Foundation
import Model
import Observability
import RPC
import Sockets
import Testing
import Wire

@testable import EntitlementService

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The trace id of a change the ledger recorded, carried on to the events logged from it and to
/// their webhook deliveries.
@Suite("Events on a trace: the change's trace id in the event and its delivery")
struct EventTraceTests {
    static let traceID = "0af7651916cd43dd8448eb211c80319c"
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000001")

    @Test("the events of a change carry the trace id of the lifecycle event each came from")
    func feedEvents() {
        let change = Change(
            position: 7, committedTimeMilliseconds: 1_790_000_000_000, kind: .subscription,
            events: [
                LifecycleEvent(key: Self.key, kind: .purchased, accountID: "acct-1", traceID: Self.traceID),
                LifecycleEvent(key: Self.key, kind: .renewed, accountID: "acct-1"),
            ])
        #expect(FeedEvents.events(of: change).map(\.traceID) == [Self.traceID, nil])
    }

    @Test(
        "a delivery of an event on a trace carries a traceparent on it and the trace id in its body; one on none, neither"
    )
    func deliveryHeader() async throws {
        let secret = "whsec_" + Data((0..<32).map { UInt8($0) }).base64EncodedString()
        let endpoint = try WebhookEndpoints.parse(
            Array(#"{"endpoints": [{"name": "t", "url": "http://127.0.0.1:9/hook", "secrets": ["\#(secret)"]}]}"#.utf8))[
                0]
        // Never called: only the request is built.
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: 9)])
        let deliverer = WebhookDeliverer(
            endpoint: endpoint, client: client, owner: "t", logger: Logger(service: "t", sink: .capturing()))
        let event = Event(
            id: "evt_7_0", type: "subscription.purchased", accountID: "acct-1", position: 7, traceID: Self.traceID)
        let traced = await deliverer.request(event, at: 1_790_000_000_000)
        let header = try #require(traced.value(forHTTPHeaderField: "traceparent"))
        let trace = try #require(TraceContext(traceparent: header))
        #expect(trace.traceID == Self.traceID)
        let body = String(decoding: try #require(traced.httpBody), as: UTF8.self)
        #expect(body.contains(#""traceId":"0af7651916cd43dd8448eb211c80319c""#))
        var untraced = event
        untraced.traceID = nil
        let plain = await deliverer.request(untraced, at: 1_790_000_000_000)
        #expect(plain.value(forHTTPHeaderField: "traceparent") == nil)
        #expect(!String(decoding: try #require(plain.httpBody), as: UTF8.self).contains("traceId"))
        client.shutdown()
    }
}
