public import AppStore
public import Clients
public import Foundation
import Model
public import Observability

/// The verifier's App Store half: notification ingress, purchase verification and restore,
/// refresh, and reconciliation, over signed-data verifiers (one per served environment), the
/// App Store Server API and the ledger.
public final class AppleAdapter: Sendable {
    let verifiers: [AppleEnvironment: AppleSignedDataVerifier]
    let api: any AppStoreAPI
    let ledger: any LedgerClientProtocol
    let tokenNamespace: UUID
    /// How CONSUMPTION_REQUEST is answered without an operator, if at all.
    let consumptionPolicy: AppleConsumptionPolicy?
    let now: @Sendable () -> Date
    /// The machine's time, for what was signed against another party's clock (a push's token,
    /// an OCSP answer); `now` unless the service decides at a simulated time.
    let machineNow: @Sendable () -> Date
    let logger: Logger
    let revocation: AppleRevocationChecker?
    /// The processing of admitted notifications, and the admission control of the ingress.
    let queue: BoundedWorkQueue
    /// How long a notification waits for the ledger before it answers 503 (Apple then sends it
    /// again).
    let ledgerTimeout: Duration
    let counters: Counters
    /// The rate limit and the samples of refused deliveries, shared with the other store's ingress.
    public let ingress: NotificationIngressGuard

    /// What the adapter counts, exported in `/metrics`.
    struct Counters: Sendable {
        let notifications: NotificationMetrics
        let reconciliation: ReconciliationMetrics

        init(registry: MetricsRegistry?) {
            notifications = NotificationMetrics(store: "apple", registry: registry)
            reconciliation = ReconciliationMetrics(store: "apple", registry: registry)
        }
    }

    /// The environment a transaction id is looked up in when the caller names none.
    var defaultEnvironment: AppleEnvironment { verifiers[.production] != nil ? .production : .sandbox }

    public init(
        verifiers: [AppleEnvironment: AppleSignedDataVerifier], api: any AppStoreAPI, ledger: any LedgerClientProtocol,
        tokenNamespace: UUID = AppleSettings.defaultTokenNamespace, revocation: AppleRevocationChecker? = nil,
        now: @escaping @Sendable () -> Date = { Date() }, machineNow: (@Sendable () -> Date)? = nil,
        logger: Logger, metrics: MetricsRegistry? = nil, processingConcurrency: Int = 8,
        admission: NotificationAdmission.Limits = .default, ledgerTimeout: Duration = .seconds(5),
        ingress: NotificationIngressGuard = NotificationIngressGuard(rate: nil, burst: 1),
        consumptionPolicy: AppleConsumptionPolicy? = nil
    ) {
        self.consumptionPolicy = consumptionPolicy
        self.ledgerTimeout = ledgerTimeout
        self.ingress = ingress
        self.verifiers = verifiers
        self.api = api
        self.ledger = ledger
        self.tokenNamespace = tokenNamespace
        self.revocation = revocation
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

    /// With online checks on: the OCSP status of the chain that signed `jws` (verified already).
    func checkRevocation(_ jws: String) async throws(AppleVerificationError) {
        try await revocation?.check(jws, now: machineNow())
    }

    var nowMilliseconds: Int64 { Int64(now().timeIntervalSince1970 * 1000) }
}
