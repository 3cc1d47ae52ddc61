import Observability
import Synchronization

/// Runs a pass every `interval` of `clock`'s time (never when it is zero) until stopped: the
/// loop both stores' reconciliation runs in.
final class PeriodicPass: Sendable {
    let interval: Duration
    let clock: any ServiceClock
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(interval: Duration, clock: any ServiceClock) {
        self.interval = interval
        self.clock = clock
    }

    /// Starts the loop: wait `interval`, run `pass`, again.
    func start(_ pass: @escaping @Sendable () async -> Void) {
        guard interval > .zero else { return }
        let interval = self.interval
        let clock = self.clock
        let running = Task {
            while !Task.isCancelled {
                do {
                    try await clock.sleep(for: interval)
                } catch {
                    return
                }
                await pass()
            }
        }
        task.withLock { $0 = running }
    }

    /// Stops the loop; a pass under way finishes first.
    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}
