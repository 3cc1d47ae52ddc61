import Dispatch
import Glibc
import Lifecycle

/// Runs the service's reload actions (its policy file, its API keys) on every SIGHUP, one after
/// the other in the order they were added, on a queue of their own. Each action logs what it
/// did; one that fails keeps what is in force.
// @unchecked: `source` is set in start and cancelled in shutdown, which the service group calls
// one after the other; the dispatch source itself is thread-safe.
final class HangupReloader: LifecycleService, @unchecked Sendable {
    let name = "reload-on-sighup"
    private let actions: [@Sendable () -> Void]
    private var source: (any DispatchSourceSignal)?

    init(actions: [@Sendable () -> Void]) { self.actions = actions }

    func start() async throws {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "reload-on-sighup"))
        let actions = self.actions
        source.setEventHandler { for action in actions { action() } }
        source.resume()
        self.source = source
    }

    func shutdown() async { source?.cancel() }
}
