import Foundation
public import Observability

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The metrics of one store's server API calls, each HTTP exchange counted as it ends:
/// `store_api_requests_total{store, endpoint, outcome}`,
/// `store_api_request_duration_seconds{store, endpoint}` and
/// `store_api_rate_limited_total{store, endpoint}` (429 answers, also counted in the first).
/// A retried call is an exchange per attempt. `endpoint` is a name from the store client's own
/// fixed list, so the labels stay a bounded set.
public final class StoreAPIMetrics: Sendable {
    /// The upper bounds of the duration buckets, in seconds.
    public static let durationBuckets: [Double] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    let registry: MetricsRegistry
    /// `apple` or `google`.
    public let store: String
    let clock: any ServiceClock

    /// The `outcome` label's values.
    public static let outcomes = [
        "2xx", "400", "401", "403", "404", "409", "410", "429", "4xx", "5xx", "timeout", "network",
    ]

    /// Metrics for `store`'s calls in `registry`, timed on `clock`. Each of `endpoints` gets its
    /// `store_api_requests_total` series of every outcome, and its `store_api_rate_limited_total`,
    /// at 0 from the start: a series that first appears already counted loses its first
    /// increments to `rate()` and `increase()`, so an outage's first burst would go unseen.
    public init(
        registry: MetricsRegistry, store: String, endpoints: [String] = [], clock: any ServiceClock = SystemClock()
    ) {
        self.registry = registry
        self.store = store
        self.clock = clock
        for endpoint in endpoints {
            for outcome in Self.outcomes { _ = requests(endpoint, outcome) }
            _ = rateLimited(endpoint)
        }
    }

    private func requests(_ endpoint: String, _ outcome: String) -> Counter {
        registry.counter(
            "store_api_requests_total", help: "HTTP exchanges with a store's server API, by endpoint and outcome.",
            labels: ["store": store, "endpoint": endpoint, "outcome": outcome])
    }

    private func rateLimited(_ endpoint: String) -> Counter {
        registry.counter(
            "store_api_rate_limited_total", help: "Exchanges a store's server API answered 429 (rate limited).",
            labels: ["store": store, "endpoint": endpoint])
    }

    /// How an exchange ended, as the `outcome` label says it: the status class or the status
    /// itself for the statuses the clients act on, `timeout`, or `network` for no answer at
    /// all (refused, cut off, cancelled, an answer past the size limit). A status outside 2xx,
    /// 4xx and 5xx (a redirect, which the clients never follow) is counted with `5xx`: the
    /// server did not answer as the API documents.
    public static func outcome(_ result: Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>) -> String {
        switch result {
        case .failure(let failure): return failure.isTimeout ? "timeout" : "network"
        case .success(let response):
            switch response.status {
            case 200...299: return "2xx"
            case 400, 401, 403, 404, 409, 410, 429: return String(response.status)
            case 400...499: return "4xx"
            default: return "5xx"
            }
        }
    }

    /// Performs `request` on `transport`, counting and timing the exchange under `endpoint`.
    public func perform(
        _ transport: HTTPClientTransport, _ request: URLRequest, endpoint: String
    ) async -> Result<HTTPClientTransport.Response, HTTPClientTransport.Failure> {
        let started = clock.nanoseconds()
        let result = await transport.perform(request)
        record(endpoint: endpoint, result, seconds: Double(clock.nanoseconds() &- started) / 1e9)
        return result
    }

    /// Counts one exchange of `endpoint` that took `seconds`.
    public func record(
        endpoint: String, _ result: Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>,
        seconds: Double
    ) {
        let outcome = Self.outcome(result)
        requests(endpoint, outcome).increment()
        registry.histogram(
            "store_api_request_duration_seconds", help: "How long one exchange with a store's server API took.",
            buckets: Self.durationBuckets, labels: ["store": store, "endpoint": endpoint]
        ).observe(seconds)
        // At 0 until a 429 (made with the endpoint's first exchange when not at the start).
        let limited = rateLimited(endpoint)
        if outcome == "429" { limited.increment() }
    }
}

extension Optional where Wrapped == StoreAPIMetrics {
    /// Performs `request` on `transport`, counted under `endpoint` when there are metrics.
    public func perform(
        _ transport: HTTPClientTransport, _ request: URLRequest, endpoint: String
    ) async -> Result<HTTPClientTransport.Response, HTTPClientTransport.Failure> {
        guard let metrics = self else { return await transport.perform(request) }
        return await metrics.perform(transport, request, endpoint: endpoint)
    }
}
