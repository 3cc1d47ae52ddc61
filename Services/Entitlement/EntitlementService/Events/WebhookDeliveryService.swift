import Foundation
public import Lifecycle
public import Observability
public import RPC
import Synchronization

/// Runs a `WebhookDeliverer` for each endpoint of `WEBHOOK_ENDPOINTS_FILE`: its lease renewed a
/// third of its time, a delivery round every 50 ms. `reload` reads the file again (SIGHUP); a
/// bad file leaves the endpoints in force.
public final class WebhookDeliveryService: LifecycleService {
    public let name = "webhooks"
    let path: String
    let client: any ClientTransport
    let owner: String
    let leaseMilliseconds: Int64
    let rules: DeliveryRules
    let logger: Logger
    let metrics: MetricsRegistry?
    private let running = Mutex<[String: (deliverer: WebhookDeliverer, task: Task<Void, Never>)]>([:])
    private let endpoints: Mutex<[WebhookEndpoint]>

    /// Reads the endpoints file; throws `WebhookConfigError` naming what is wrong with it.
    public init(
        path: String, client: any ClientTransport, owner: String, leaseMilliseconds: Int64,
        rules: DeliveryRules = DeliveryRules(),
        logger: Logger, metrics: MetricsRegistry?
    ) throws(WebhookConfigError) {
        self.path = path
        self.client = client
        self.owner = owner
        self.leaseMilliseconds = leaseMilliseconds
        self.rules = rules
        self.logger = logger
        self.metrics = metrics
        endpoints = Mutex(try Self.read(path))
    }

    static func read(_ path: String) throws(WebhookConfigError) -> [WebhookEndpoint] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw WebhookConfigError("cannot read \(path)")
        }
        return try WebhookEndpoints.parse(Array(data))
    }

    public func start() async throws {
        for endpoint in endpoints.withLock({ $0 }) { launch(endpoint) }
        logger.info("webhook endpoints", ["endpoints": endpoints.withLock { $0.map(\.name).joined(separator: ",") }])
    }

    private func launch(_ endpoint: WebhookEndpoint) {
        let deliverer = WebhookDeliverer(
            endpoint: endpoint, client: client, owner: owner, leaseMilliseconds: leaseMilliseconds, rules: rules,
            logger: logger, metrics: metrics)
        let lease = leaseMilliseconds
        let clock = logger.clock
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !Task.isCancelled {
                        await deliverer.renewLease()
                        try? await clock.sleep(for: .milliseconds(lease / 3))
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        await deliverer.step()
                        try? await clock.sleep(for: .milliseconds(50))
                    }
                }
            }
        }
        running.withLock { $0[endpoint.name] = (deliverer, task) }
    }

    /// Reads the file again: new endpoints start, removed ones stop, changed ones take their
    /// new URL, secrets and filters.
    public func reload() {
        let fresh: [WebhookEndpoint]
        do { fresh = try Self.read(path) } catch {
            logger.error("webhook endpoints reload refused; the endpoints in force stay", ["error": error.description])
            return
        }
        endpoints.withLock { $0 = fresh }
        let current = running.withLock { $0 }
        for (name, entry) in current where !fresh.contains(where: { $0.name == name }) {
            entry.task.cancel()
            running.withLock { _ = $0.removeValue(forKey: name) }
        }
        for endpoint in fresh {
            if let entry = current[endpoint.name] {
                Task { await entry.deliverer.update(endpoint) }
            } else {
                launch(endpoint)
            }
        }
        logger.info("webhook endpoints reloaded", ["endpoints": fresh.map(\.name).joined(separator: ",")])
    }

    public func shutdown() async {
        let tasks = running.withLock { $0.values.map(\.task) }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        for deliverer in running.withLock({ $0.values.map(\.deliverer) }) { try? await deliverer.record() }
    }
}
