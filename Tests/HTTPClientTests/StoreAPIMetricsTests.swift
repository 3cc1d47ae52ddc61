import Foundation
import Observability
import Testing

@testable import HTTPClient

@Suite("Store API metrics")
struct StoreAPIMetricsTests {
    static func answer(_ status: Int) -> Result<HTTPClientTransport.Response, HTTPClientTransport.Failure> {
        .success(HTTPClientTransport.Response(status: status, headers: [:], body: Data()))
    }

    @Test(
        "an exchange's outcome is its status class, the status the clients act on, timeout or network",
        arguments: [
            (200, "2xx"), (204, "2xx"), (400, "400"), (401, "401"), (403, "403"), (404, "404"), (409, "409"),
            (410, "410"), (429, "429"), (418, "4xx"), (499, "4xx"), (500, "5xx"), (503, "5xx"), (302, "5xx"),
        ])
    func statuses(_ status: Int, _ outcome: String) {
        #expect(StoreAPIMetrics.outcome(Self.answer(status)) == outcome)
    }

    @Test("no answer is timeout when the exchange ran out of time, else network")
    func failures() {
        #expect(StoreAPIMetrics.outcome(.failure(.network(HTTPClientTransport.Failure.timedOutCause))) == "timeout")
        #expect(StoreAPIMetrics.outcome(.failure(.network("connection refused"))) == "network")
        #expect(StoreAPIMetrics.outcome(.failure(.cancelled)) == "network")
        #expect(StoreAPIMetrics.outcome(.failure(.tooLarge(limit: 10))) == "network")
    }

    @Test("every endpoint's outcome series exist at 0 from the start, so rate() sees an outage's first burst")
    func seriesAtZero() {
        let registry = MetricsRegistry()
        let metrics = StoreAPIMetrics(
            registry: registry, store: "apple", endpoints: ["subscription_statuses", "transaction_info"],
            clock: Observability.ManualClock())
        for endpoint in ["subscription_statuses", "transaction_info"] {
            for outcome in StoreAPIMetrics.outcomes {
                #expect(
                    registry.value(
                        #"store_api_requests_total{endpoint="\#(endpoint)",outcome="\#(outcome)",store="apple"}"#) == 0)
            }
            #expect(registry.value(#"store_api_rate_limited_total{endpoint="\#(endpoint)",store="apple"}"#) == 0)
        }
        metrics.record(endpoint: "transaction_info", Self.answer(503), seconds: 0.1)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="transaction_info",outcome="5xx",store="apple"}"#) == 1)
    }

    @Test("an exchange's time falls in the first bucket that holds it; the sum adds the seconds")
    func durations() {
        let registry = MetricsRegistry()
        let metrics = StoreAPIMetrics(registry: registry, store: "google", clock: Observability.ManualClock())
        metrics.record(endpoint: "acknowledge", Self.answer(200), seconds: 0.3)
        metrics.record(
            endpoint: "acknowledge", .failure(.network(HTTPClientTransport.Failure.timedOutCause)), seconds: 40)
        let labels = #"endpoint="acknowledge",store="google""#
        #expect(
            registry.value(
                #"store_api_request_duration_seconds_bucket{endpoint="acknowledge",le="0.25",store="google"}"#) == 0)
        #expect(
            registry.value(
                #"store_api_request_duration_seconds_bucket{endpoint="acknowledge",le="0.5",store="google"}"#) == 1)
        #expect(
            registry.value(
                #"store_api_request_duration_seconds_bucket{endpoint="acknowledge",le="30.0",store="google"}"#) == 1)
        #expect(
            registry.value(
                #"store_api_request_duration_seconds_bucket{endpoint="acknowledge",le="+Inf",store="google"}"#) == 2)
        #expect(registry.value("store_api_request_duration_seconds_sum{\(labels)}") == 40.3)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="acknowledge",outcome="timeout",store="google"}"#) == 1)
    }
}
