import Observability
import Synchronization

/// Runs submitted work as tasks, at most `concurrency` at a time, holding at most `capacity`
/// more; beyond that `submit` refuses (the caller's work stays where it came from, such as a
/// pending inbox entry that reconciliation picks up). Tests wait for `idle()` instead of sleeping.
final class BoundedWorkQueue: Sendable {
    typealias Work = @Sendable () async -> Void

    private struct State {
        var running = 0
        var waiting: [Work] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let concurrency: Int
    let capacity: Int
    private let state = Mutex(State())

    init(concurrency: Int, capacity: Int) {
        self.concurrency = max(1, concurrency)
        self.capacity = capacity
    }

    /// Queues `work`, to run under the submitter's trace (`TraceContext.current`); false when
    /// the queue is full.
    @discardableResult
    func submit(_ work: @escaping Work) -> Bool {
        let trace = TraceContext.current
        let work: Work = { await TraceContext.$current.withValue(trace) { await work() } }
        let start = state.withLock { state -> Bool? in
            if state.running < concurrency {
                state.running += 1
                return true
            }
            guard state.waiting.count < capacity else { return nil }
            state.waiting.append(work)
            return false
        }
        switch start {
        case nil: return false
        case true?: launch(work)
        case false?: break
        }
        return true
    }

    /// Returns once nothing is running or waiting.
    func idle() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.running == 0 && state.waiting.isEmpty { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func launch(_ work: @escaping Work) {
        Task {
            var next: Work? = work
            while let current = next {
                await current()
                next = state.withLock { state -> Work? in
                    if !state.waiting.isEmpty { return state.waiting.removeFirst() }
                    state.running -= 1
                    return nil
                }
            }
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                guard state.running == 0 && state.waiting.isEmpty else { return [] }
                defer { state.idleWaiters = [] }
                return state.idleWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}
