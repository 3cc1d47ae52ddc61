import Foundation
import HTTP
import HTTPClient
import Observability
import Testing

@testable import AppStore

/// The App Store client's `store_api_*` families, counted per HTTP exchange.
@Suite("App Store API metrics")
struct AppStoreAPIMetricsTests {
    /// A client of the harness's fakes counting into `registry`, timed on a clock that stands still.
    static func client(_ harness: AppStoreHarness, _ registry: MetricsRegistry, maxAttempts: Int = 4) throws
        -> AppStoreServerAPIClient
    {
        try harness.client {
            $0.metrics = StoreAPIMetrics(registry: registry, store: "apple", clock: Observability.ManualClock())
            $0.maxAttempts = maxAttempts
        }
    }

    @Test("a 429 then a 200 are two exchanges of the endpoint, one of them rate limited")
    func rateLimitedThenAnswered() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", AppStoreServerAPIClientTests.transactionPath,
            HTTPResponse(status: 429, headers: [("Retry-After", "1")]),
            AppStoreServerAPIClientTests.signedTransaction("a"))
        let registry = MetricsRegistry()
        let client = try Self.client(harness, registry)

        _ = try await client.transactionInfo(
            transactionID: AppStoreServerAPIClientTests.transactionID, environment: .production)

        let labels = #"endpoint="transaction_info",store="apple""#
        #expect(
            registry.value(#"store_api_requests_total{endpoint="transaction_info",outcome="429",store="apple"}"#) == 1)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="transaction_info",outcome="2xx",store="apple"}"#) == 1)
        #expect(registry.value("store_api_rate_limited_total{\(labels)}") == 1)
        #expect(registry.value("store_api_request_duration_seconds_count{\(labels)}") == 2)
        #expect(
            registry.value(
                #"store_api_request_duration_seconds_bucket{endpoint="transaction_info",le="0.01",store="apple"}"#)
                == 2)
    }

    @Test("each exchange of a paged call counts under its endpoint; 5xx and 400 answers under their outcome")
    func pagesAndFailures() async throws {
        let harness = try AppStoreHarness()
        let history = "/inApps/v2/history/\(AppStoreServerAPIClientTests.transactionID)"
        harness.production.answer(
            "GET", history, .json(#"{"signedTransactions":["t.1.s"],"hasMore":true,"revision":"r1"}"#),
            .json(#"{"signedTransactions":["t.2.s"],"hasMore":false,"revision":"r2"}"#))
        harness.sandbox.answer("GET", AppStoreServerAPIClientTests.transactionPath, HTTPResponse(status: 503))
        harness.production.answer(
            "GET", "/inApps/v2/refund/lookup/\(AppStoreServerAPIClientTests.transactionID)", HTTPResponse(status: 400))
        let registry = MetricsRegistry()
        let client = try Self.client(harness, registry, maxAttempts: 2)

        _ = try await client.transactionHistory(
            transactionID: AppStoreServerAPIClientTests.transactionID, environment: .production)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="transaction_history",outcome="2xx",store="apple"}"#)
                == 2)
        _ = try? await client.transactionInfo(
            transactionID: AppStoreServerAPIClientTests.transactionID, environment: .sandbox)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="transaction_info",outcome="5xx",store="apple"}"#) == 2)
        _ = try? await client.refundHistory(
            transactionID: AppStoreServerAPIClientTests.transactionID, environment: .production)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="refund_history",outcome="400",store="apple"}"#) == 1)
        #expect(registry.value(#"store_api_rate_limited_total{endpoint="refund_history",store="apple"}"#) == 0)
    }
}
