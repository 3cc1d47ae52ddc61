import Foundation
import Observability
import Synchronization

/// Runs the processing of admitted notifications as tasks, at most `concurrency` at a time, and
/// holds the notification ingress to `limits` (`NotificationAdmission`): a delivery takes a
/// reservation before anything is recorded (`admit()`), and a reservation is turned into work
/// (`submit(_:_:)`, which never refuses) or given back (`release(_:)`). So a notification
/// answered 2xx always has its place in the queue: none is left for reconciliation to find.
/// Tests wait for `idle()` instead of sleeping.
final class BoundedWorkQueue: Sendable {
    typealias Work = @Sendable () async -> Void

    /// A place in the backlog held for one delivery while it is checked and recorded. Each one
    /// is used once: submitted or released.
    struct Reservation: Sendable {
        fileprivate init() {}
    }

    private struct State {
        var running = 0
        var waiting: [Work] = []
        var reserved = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var rate = ProcessingRate()

        var counts: NotificationAdmission.Counts {
            NotificationAdmission.Counts(running: running, waiting: waiting.count, reserved: reserved)
        }

        /// The idle waiters to resume when the queue is empty (taken out of the state), else none.
        mutating func idleWaitersToResume() -> [CheckedContinuation<Void, Never>] {
            guard counts.backlog == 0 else { return [] }
            defer { idleWaiters = [] }
            return idleWaiters
        }
    }

    let concurrency: Int
    let limits: NotificationAdmission.Limits
    /// The machine's time, for the processing rate that `Retry-After` is derived from.
    private let clock: @Sendable () -> Date
    /// Set to the backlog at every change.
    private let backlogGauge: Gauge
    private let state = Mutex(State())

    init(
        concurrency: Int, limits: NotificationAdmission.Limits = .default,
        clock: @escaping @Sendable () -> Date = { Date() }, backlogGauge: Gauge = Gauge()
    ) {
        self.concurrency = max(1, concurrency)
        self.limits = limits
        self.clock = clock
        self.backlogGauge = backlogGauge
    }

    /// Reserves a place for one delivery, or says why not and when to deliver again.
    func admit() -> Result<Reservation, NotificationAdmission.Refusal> {
        let now = clock()
        return state.withLock { state in
            let counts = state.counts
            if let refusal = NotificationAdmission.decide(
                counts, limits: limits, perSecond: state.rate.perSecond(at: now))
            {
                return .failure(refusal)
            }
            state.reserved += 1
            backlogGauge.set(state.counts.backlog)
            return .success(Reservation())
        }
    }

    /// Queues `work` in the place `reservation` held, to run under the submitter's trace
    /// (`TraceContext.current`).
    func submit(_ reservation: Reservation, _ work: @escaping Work) {
        let trace = TraceContext.current
        let work: Work = { await TraceContext.$current.withValue(trace) { await work() } }
        let start = state.withLock { state -> Bool in
            state.reserved -= 1
            if state.running < concurrency {
                state.running += 1
                return true
            }
            state.waiting.append(work)
            return false
        }
        if start { launch(work) }
    }

    /// Gives back the place `reservation` held: the delivery needs no processing.
    func release(_ reservation: Reservation) {
        let waiters = state.withLock { state in
            state.reserved -= 1
            backlogGauge.set(state.counts.backlog)
            return state.idleWaitersToResume()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Notifications admitted and not yet processed: running, waiting, and reserved.
    var backlog: Int { state.withLock { $0.counts.backlog } }

    /// Returns once nothing is running, waiting or reserved.
    func idle() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.counts.backlog == 0 { return true }
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
                let finished = clock()
                next = state.withLock { state -> Work? in
                    state.rate.record(at: finished)
                    if !state.waiting.isEmpty {
                        backlogGauge.set(state.counts.backlog - 1)
                        return state.waiting.removeFirst()
                    }
                    state.running -= 1
                    backlogGauge.set(state.counts.backlog)
                    return nil
                }
            }
            let waiters = state.withLock { $0.idleWaitersToResume() }
            for waiter in waiters { waiter.resume() }
        }
    }
}
