import Foundation
public import Lifecycle
public import Observability
import Synchronization

/// Runs `LedgerVerifiedStates.deriveAccessAgain()` once the ledger serves, and again after a
/// failure (every `retry`) until it completes; logs what it did.
public final class AccessRulesPass: LifecycleService {
    public let name = "access-rules"
    let ledger: Ledger
    let logger: Logger
    let retry: Duration
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init(ledger: Ledger, logger: Logger, retry: Duration = .seconds(5)) {
        self.ledger = ledger
        self.logger = logger
        self.retry = retry
    }

    public func start() async throws {
        let (ledger, logger, retry) = (ledger, logger, retry)
        let owner = UUID().uuidString
        let running = Task {
            let rules = "\(Ledger.appStoreAccessRulesVersion)"
            while !Task.isCancelled {
                do {
                    guard let done = try await ledger.verifiedStates.deriveAccessAgain(owner: owner) else {
                        logger.info("App Store access periods are derived under the current rules", ["rules": rules])
                        return
                    }
                    if !done.elsewhere {
                        logger.info(
                            "App Store access periods derived again",
                            ["rules": rules, "read": "\(done.read)", "changed": "\(done.changed)"])
                        return
                    }
                    // Another instance runs the pass: look again once it may have finished.
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning(
                        "deriving App Store access periods again failed; trying again", ["error": "\(error)"])
                }
                do { try await logger.clock.sleep(for: retry) } catch { return }
            }
        }
        task.withLock { $0 = running }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}
