public import Clients
public import Foundation
public import GooglePlay
import Model
public import Observability

/// The verifier's Google Play half: Real-time Developer Notifications, purchase verification
/// with acknowledgement, refresh, and reconciliation, over the Play Developer API and the ledger.
public final class GoogleAdapter: Sendable {
    /// The package names served, and what each one-time product is.
    public struct Catalog: Sendable {
        public var packages: Set<String>
        /// One-time products (by product id); everything else is a subscription.
        public var oneTimeProducts: Set<String>
        /// The one-time products that are consumed after they are recorded.
        public var consumableProducts: Set<String>

        public init(packages: Set<String>, oneTimeProducts: Set<String> = [], consumableProducts: Set<String> = []) {
            self.packages = packages
            self.oneTimeProducts = oneTimeProducts.union(consumableProducts)
            self.consumableProducts = consumableProducts
        }
    }

    let catalog: Catalog
    let api: any GooglePlayAPI
    let ledger: any LedgerClientProtocol
    let now: @Sendable () -> Date
    /// The machine's time, for what was signed against another party's clock (a push's token,
    /// an OCSP answer); `now` unless the service decides at a simulated time.
    let machineNow: @Sendable () -> Date
    let logger: Logger
    /// The processing of admitted notifications, and the admission control of the ingress.
    let queue: BoundedWorkQueue
    let counters: Counters
    /// The rate limit and the samples of refused deliveries, shared with the other store's ingress.
    public let ingress: NotificationIngressGuard
    /// How long a push waits for its token check and for the ledger before it answers 503
    /// (Pub/Sub then delivers it again).
    let ledgerTimeout: Duration

    /// What the adapter counts, exported in `/metrics`.
    struct Counters: Sendable {
        let notifications: NotificationMetrics
        let reconciliation: ReconciliationMetrics
        let unauthenticated: Counter
        let acknowledged: Counter
        let unconfiguredProducts: Counter
        let voidedGaps: Counter

        init(registry: MetricsRegistry?) {
            func counter(_ name: String, _ help: String) -> Counter {
                registry?.counter(name, help: help) ?? Counter()
            }
            notifications = NotificationMetrics(store: "google", registry: registry)
            reconciliation = ReconciliationMetrics(store: "google", registry: registry)
            unauthenticated = counter("google_pushes_unauthenticated_total", "Pushes refused with 401.")
            acknowledged = counter("google_purchases_acknowledged_total", "Purchases acknowledged with Google.")
            unconfiguredProducts = counter(
                "google_unconfigured_products_total", "One-time purchases of a product the configuration does not name."
            )
            voidedGaps = counter(
                "google_voided_window_gaps_total",
                "Voided-purchase pulls whose start was older than Google accepts (30 days) and was moved up.")
        }
    }

    public init(
        catalog: Catalog, api: any GooglePlayAPI, ledger: any LedgerClientProtocol,
        now: @escaping @Sendable () -> Date = { Date() }, machineNow: (@Sendable () -> Date)? = nil,
        logger: Logger, metrics: MetricsRegistry? = nil, processingConcurrency: Int = 8,
        admission: NotificationAdmission.Limits = .default, ledgerTimeout: Duration = .seconds(5),
        ingress: NotificationIngressGuard = NotificationIngressGuard(rate: nil, burst: 1)
    ) {
        self.ledgerTimeout = ledgerTimeout
        self.ingress = ingress
        self.catalog = catalog
        self.api = api
        self.ledger = ledger
        self.now = now
        self.machineNow = machineNow ?? now
        self.logger = logger
        counters = Counters(registry: metrics)
        queue = BoundedWorkQueue(
            concurrency: processingConcurrency, limits: admission, clock: self.machineNow,
            backlogGauge: counters.notifications.backlog)
    }

    /// Returns once no notification is being processed (for tests and drains).
    public func processingIdle() async { await queue.idle() }

    var nowMilliseconds: Int64 { Int64(now().timeIntervalSince1970 * 1000) }

    /// The ledger key of a purchase token. Google has one environment; test purchases are kept
    /// apart as sandbox, the rest as production.
    static func key(_ token: String, test: Bool) -> SubscriptionKey {
        SubscriptionKey(store: .google, environment: test ? .sandbox : .production, storeID: token)
    }
}
