public import Config
import Foundation
public import Lifecycle
import Observability
public import RPC
public import ServiceRuntime
import Wire

/// The entitlement service: its RPC methods, its parts and its configuration defaults.
public enum EntitlementService {
    /// The protobuf service name; methods are "\(serviceName)/Method".
    public static let serviceName = EntitlementRPC.service
    public static let healthMethod = EntitlementRPC.health.name
    public static let defaultRPCListen = "127.0.0.1:7003"
    public static let defaultHTTPListen = "127.0.0.1:8003"
    /// This process's name in the ledger's leases.
    static let instanceName = String(
        "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))".prefix(128))

    /// Builds the entitlement service from the environment: the product policy from
    /// `ENTITLEMENT_POLICY_FILE` (without it no capability is known), and a view of the ledger
    /// (`LEDGER_ADDR`) kept by its change feed. It is ready once the ledger answers and the
    /// first snapshot is loaded. Throws `ConfigError` naming a bad variable or a bad policy file.
    public static func make(environment: EnvironmentReader, signal: ShutdownSignal) throws -> ServiceHost {
        try make(environment: environment, signal: signal, ledger: nil)
    }

    /// As `make(environment:signal:)`, with `ledger` in place of a client of `LEDGER_ADDR` when
    /// given (a ledger in this process, through `InProcessTransport`).
    public static func make(
        environment: EnvironmentReader, signal: ShutdownSignal, ledger ledgerTransport: (any ClientTransport)?
    )
        throws -> ServiceHost
    {
        let host = try ServiceHost(
            name: "entitlement", healthMethod: healthMethod, defaultRPC: defaultRPCListen,
            defaultHTTP: defaultHTTPListen,
            environment: environment, signal: signal)
        // When the event log is turned on, if it is: before anything else this instance does.
        let started = host.clock.epochMilliseconds()
        let client = try host.ledgerDependency(environment: environment, transport: ledgerTransport)
        var policies: PolicyStore?
        let view = EntitlementView()
        if let path = environment.raw("ENTITLEMENT_POLICY_FILE") {
            do {
                let store = try PolicyStore.load(path: path)
                host.logger.info(
                    "policy loaded",
                    ["version": store.policy.version, "capabilities": "\(store.policy.capabilityCount)"])
                let logger = host.logger
                host.onHangup {
                    do {
                        let policy = try store.reload()
                        logger.info(
                            "policy reloaded",
                            [
                                "version": policy.version, "capabilities": "\(policy.capabilityCount)",
                                "products": "\(policy.productCount)",
                            ])
                        view.warnAboutUndatedNonRenewingProducts(policy: policy, logger: logger)
                    } catch {
                        logger.error("policy reload refused; the old policy stays in force", ["error": "\(error)"])
                    }
                }
                policies = store
            } catch {
                throw ConfigError(variable: "ENTITLEMENT_POLICY_FILE", problem: "\(error)")
            }
        } else {
            host.logger.warning("no ENTITLEMENT_POLICY_FILE: no capability is known", [:])
        }
        // The event log: computed by the one instance holding the ledger's `events` lease.
        // Webhooks deliver the log, so they turn it on; turned off beside them, nothing would
        // ever be delivered.
        let webhooksFile = environment.raw("WEBHOOK_ENDPOINTS_FILE")
        var publisher: EventPublisher?
        let eventLog = try environment.bool("EVENT_LOG", default: webhooksFile != nil)
        if !eventLog, webhooksFile != nil {
            throw ConfigError(
                variable: "EVENT_LOG",
                problem: "is false while WEBHOOK_ENDPOINTS_FILE is set: webhooks deliver the event log, so nothing "
                    + "would be delivered (set EVENT_LOG=true, or leave it unset)")
        }
        if eventLog {
            let lease = try environment.int("EVENT_LOG_LEASE_MS", default: 6000, range: 3000...60_000)
            publisher = EventPublisher(
                client: client, view: view, policies: policies, owner: Self.instanceName,
                leaseMilliseconds: Int64(lease), logger: host.logger, metrics: host.metrics, logOn: started)
        }
        // The checkpoint: added before the feed, so that it stops after it and writes the view
        // as the feed left it.
        var checkpoint: ViewCheckpoint?
        var checkpointService: ViewCheckpointService?
        if let path = environment.raw("VIEW_CHECKPOINT_PATH") {
            let folder = (path as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            guard !path.isEmpty, !path.hasSuffix("/"),
                FileManager.default.fileExists(atPath: folder.isEmpty ? "." : folder, isDirectory: &isDirectory),
                isDirectory.boolValue, access(folder.isEmpty ? "." : folder, W_OK) == 0
            else {
                throw ConfigError(
                    variable: "VIEW_CHECKPOINT_PATH",
                    problem: "\(path) is not a file path in a folder this process can write")
            }
            let seconds = try environment.int("VIEW_CHECKPOINT_INTERVAL_SECONDS", default: 300, range: 1...86_400)
            let store = policies
            checkpoint = ViewCheckpoint(path: path)
            let service = ViewCheckpointService(
                checkpoint: ViewCheckpoint(path: path), view: view, interval: .seconds(seconds),
                policyVersion: { store?.policy.version ?? "" }, logger: host.logger, metrics: host.metrics)
            checkpointService = service
            host.add(service)
        }
        host.add(
            LedgerFeedFollower(
                view: view, client: client, logger: host.logger, metrics: host.metrics, policies: policies,
                publisher: publisher, checkpoint: checkpoint, checkpointService: checkpointService))
        if let publisher { host.add(EventPublisherService(publisher)) }
        if let path = webhooksFile {
            let lease = try environment.int("EVENT_LOG_LEASE_MS", default: 6000, range: 3000...60_000)
            var rules = DeliveryRules()
            rules.maxAge =
                Int64(
                    try environment.int("WEBHOOK_MAX_AGE_SECONDS", default: 3 * 86_400, range: 60...30 * 86_400)) * 1000
            rules.maxInFlight = try environment.int("WEBHOOK_MAX_IN_FLIGHT", default: 16, range: 1...256)
            do {
                let webhooks = try WebhookDeliveryService(
                    path: path, client: client, owner: Self.instanceName, leaseMilliseconds: Int64(lease),
                    rules: rules, logger: host.logger, metrics: host.metrics)
                host.add(webhooks)
                host.onHangup { webhooks.reload() }
            } catch {
                throw ConfigError(variable: "WEBHOOK_ENDPOINTS_FILE", problem: error.description)
            }
        }
        host.addReadinessCheck("snapshot") { view.position != nil }
        host.metrics.addCollector { text in
            let counts = view.counts
            text.family("entitlement_view_accounts", type: "gauge", help: "Accounts in the view.")
            text.sample("entitlement_view_accounts", [:], Double(counts.accounts))
            text.family("entitlement_view_subscriptions", type: "gauge", help: "Subscriptions in the view.")
            text.sample("entitlement_view_subscriptions", [:], Double(counts.subscriptions))
        }
        host.metrics.addCollector { [clock = host.clock, policies] text in
            view.writeMetrics(policy: policies?.policy, now: clock.epochMilliseconds(), into: &text)
        }
        EntitlementMethods.register(
            on: host.router, view: view, policies: policies, now: { [clock = host.clock] in clock.epochMilliseconds() })
        return host
    }
}
