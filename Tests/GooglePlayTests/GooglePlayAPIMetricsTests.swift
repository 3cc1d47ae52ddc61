import Foundation
import HTTP
import HTTPClient
import Observability
import Testing

@testable import GooglePlay

/// The Play client's `store_api_*` families, counted per HTTP exchange, the token exchange's too.
@Suite("Google Play API metrics")
struct GooglePlayAPIMetricsTests {
    @Test("the token exchange and each API exchange count under their endpoint; a refused token's 401 under 401")
    func tokenAndCalls() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", GooglePlayDeveloperAPIClientTests.subscriptionPath,
            GooglePlayDeveloperAPIClientTests.activeSubscription)
        let registry = MetricsRegistry()
        let client = try harness.client {
            $0.metrics = StoreAPIMetrics(registry: registry, store: "google", clock: Observability.ManualClock())
        }

        _ = try await client.subscription(
            packageName: GooglePlayDeveloperAPIClientTests.packageName, token: GooglePlayDeveloperAPIClientTests.token)
        #expect(registry.value(#"store_api_requests_total{endpoint="token",outcome="2xx",store="google"}"#) == 1)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="subscriptions_get",outcome="2xx",store="google"}"#) == 1
        )
        #expect(registry.value(#"store_api_request_duration_seconds_count{endpoint="token",store="google"}"#) == 1)

        // The access token is refused: a 401, a new token, the call again.
        harness.api.refuse("ya29.fake-access-token-1")
        _ = try await client.subscription(
            packageName: GooglePlayDeveloperAPIClientTests.packageName, token: GooglePlayDeveloperAPIClientTests.token)
        #expect(
            registry.value(#"store_api_requests_total{endpoint="subscriptions_get",outcome="401",store="google"}"#) == 1
        )
        #expect(
            registry.value(#"store_api_requests_total{endpoint="subscriptions_get",outcome="2xx",store="google"}"#) == 2
        )
        #expect(registry.value(#"store_api_requests_total{endpoint="token",outcome="2xx",store="google"}"#) == 2)
        #expect(
            registry.value(
                #"store_api_request_duration_seconds_bucket{endpoint="subscriptions_get",le="0.01",store="google"}"#)
                == 3)
    }
}
