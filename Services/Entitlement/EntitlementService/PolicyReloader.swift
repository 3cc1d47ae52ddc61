import Dispatch
import Glibc
public import Lifecycle
public import Observability

/// Reloads the policy file on SIGHUP. A bad file is logged and the policy in force stays.
// @unchecked: `source` is set in start and cancelled in shutdown, which the service group calls
// one after the other; the dispatch source itself is thread-safe.
public final class PolicyReloader: LifecycleService, @unchecked Sendable {
    public let name = "policy-reloader"
    let policies: PolicyStore
    let logger: Logger
    let view: EntitlementView?
    private var source: (any DispatchSourceSignal)?

    public init(policies: PolicyStore, logger: Logger, view: EntitlementView? = nil) {
        self.policies = policies
        self.logger = logger
        self.view = view
    }

    public func start() async throws {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "policy-reload"))
        let policies = self.policies
        let logger = self.logger
        let view = self.view
        source.setEventHandler {
            do {
                let policy = try policies.reload()
                logger.info(
                    "policy reloaded",
                    [
                        "version": policy.version, "capabilities": "\(policy.capabilityCount)",
                        "products": "\(policy.productCount)",
                    ])
                view?.warnAboutUndatedNonRenewingProducts(policy: policy, logger: logger)
            } catch {
                logger.error("policy reload refused; the old policy stays in force", ["error": "\(error)"])
            }
        }
        source.resume()
        self.source = source
    }

    public func shutdown() async {
        source?.cancel()
    }
}
