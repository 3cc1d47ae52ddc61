import Synchronization

/// Wakes change-feed readers when this instance commits, so a new change reaches them at once;
/// they still look on their own every poll interval for what other instances (on the same
/// PostgreSQL) commit.
final class ChangeSignal: Sendable {
    private struct State {
        var version: UInt64 = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    /// Commits seen so far.
    var version: UInt64 { state.withLock { $0.version } }

    /// Readers waiting now (for tests that must notify a parked waiter).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// A commit happened: wakes every waiter.
    func notify() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.version &+= 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once a commit after `seen` (a `version` read earlier) happened, after `timeout`,
    /// or when the task is cancelled.
    func wait(beyond seen: UInt64, timeout: Duration) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            wake(id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    // Cancelled before the waiter was parked: the cancellation handler found
                    // nothing to wake, so do not park.
                    if state.version != seen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
        timer.cancel()
    }

    private func wake(_ id: Int) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}
