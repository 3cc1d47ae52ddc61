public import Dispatch
import Glibc
import Synchronization

/// The time the runtime reads: monotonic nanoseconds for deadlines, timers and latencies, and
/// wall time for what it stamps. Every part of Shared that needs time takes one, so that a test
/// can hand in a `ManualClock` and move time itself; `SystemClock` reads the machine's.
public protocol ServiceClock: Sendable {
    /// Monotonic nanoseconds: the time base of deadlines, timers and latency figures.
    func nanoseconds() -> UInt64
    /// Wall time, in milliseconds since the Unix epoch: the time the service decides at
    /// (commit times, "now" of an access question, when access ended).
    func epochMilliseconds() -> Int64
    /// The machine's wall time, for what another party checks against its own clock: the
    /// issue and expiry times of tokens the service signs, a webhook's `webhook-timestamp`, an
    /// HTTP `Retry-After` date. The same as `epochMilliseconds()` except for a clock that
    /// follows a simulated one (`FileClock`).
    func machineEpochMilliseconds() -> Int64
    /// Suspends for `duration` of this clock's time; throws `CancellationError` when the task
    /// is cancelled first.
    func sleep(for duration: Duration) async throws
    /// Calls `wake` each time the clock moves other than by the passing of time (a test's
    /// advance), so that an event loop waiting on the machine's time looks at its timers again.
    func whenAdvanced(_ wake: @escaping @Sendable () -> Void)
    /// Blocks the calling thread until `semaphore` is signalled (true) or `duration` of this
    /// clock's time passed (false). For threads that may block, never the cooperative pool.
    func wait(_ semaphore: DispatchSemaphore, for duration: Duration) -> Bool
}

/// The machine's clocks: CLOCK_MONOTONIC and CLOCK_REALTIME.
public struct SystemClock: ServiceClock {
    public init() {}

    @inline(__always)
    public func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    public func epochMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }

    public func whenAdvanced(_ wake: @escaping @Sendable () -> Void) {}

    public func wait(_ semaphore: DispatchSemaphore, for duration: Duration) -> Bool {
        semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: duration.nanosecondsClamped))) == .success
    }
}

extension ServiceClock {
    public func machineEpochMilliseconds() -> Int64 { epochMilliseconds() }
}

extension ServiceClock where Self == SystemClock {
    /// The machine's clocks.
    public static var system: SystemClock { SystemClock() }
}

/// A clock that moves only when told: `advance(by:)` moves both readings, wakes the sleepers
/// whose time has come (in the order of their ends) and tells the loops that watch it.
public final class ManualClock: ServiceClock {
    private struct Sleeper {
        let id: UInt64
        let end: UInt64
        /// Ends the sleep: with nil when its time came, with the error that ended it otherwise.
        let wake: @Sendable ((any Error)?) -> Void
    }

    private struct State {
        var nanoseconds: UInt64
        var epochMilliseconds: Int64
        var sleepers: [Sleeper] = []
        /// Sleeps cancelled before they were queued.
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
        var watchers: [@Sendable () -> Void] = []
    }

    private let state: Mutex<State>

    /// Starts at monotonic `nanoseconds` (not 0, so that "0" never reads as a time) and wall
    /// time `epochMilliseconds`.
    public init(nanoseconds: UInt64 = 1_000_000_000, epochMilliseconds: Int64 = 1_790_000_000_000) {
        state = Mutex(State(nanoseconds: nanoseconds, epochMilliseconds: epochMilliseconds))
    }

    public func nanoseconds() -> UInt64 { state.withLock { $0.nanoseconds } }

    public func epochMilliseconds() -> Int64 { state.withLock { $0.epochMilliseconds } }

    /// How many tasks sleep, and threads wait, on this clock now.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    let end = state.nanoseconds.saturatingAdd(duration.nanosecondsClamped)
                    if end <= state.nanoseconds { return .success(()) }
                    state.sleepers.append(
                        Sleeper(id: id, end: end) { error in
                            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                        })
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    // Not queued yet: the sleep ends as it starts.
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            cancelled?.wake(CancellationError())
        }
    }

    public func whenAdvanced(_ wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.watchers.append(wake) }
    }

    public func wait(_ semaphore: DispatchSemaphore, for duration: Duration) -> Bool {
        let timedOut = Atomic<Bool>(false)
        let id = state.withLock { state -> UInt64? in
            let end = state.nanoseconds.saturatingAdd(duration.nanosecondsClamped)
            guard end > state.nanoseconds else { return nil }
            state.nextID += 1
            state.sleepers.append(
                Sleeper(id: state.nextID, end: end) { _ in timedOut.store(true, ordering: .releasing) })
            return state.nextID
        }
        guard let id else { return semaphore.wait(timeout: .now()) == .success }
        // The thread looks every millisecond of the machine's time whether its end has come.
        while !timedOut.load(ordering: .acquiring) {
            if semaphore.wait(timeout: .now() + .milliseconds(1)) == .success {
                state.withLock { $0.sleepers.removeAll { $0.id == id } }
                return true
            }
        }
        return semaphore.wait(timeout: .now()) == .success
    }

    /// Moves the clock by `duration`; the sleepers it reaches wake, earliest first.
    public func advance(by duration: Duration) {
        let (due, watchers) = state.withLock { state -> ([Sleeper], [@Sendable () -> Void]) in
            let step = duration.nanosecondsClamped
            state.nanoseconds = state.nanoseconds.saturatingAdd(step)
            state.epochMilliseconds += Int64(clamping: step / 1_000_000)
            let due = state.sleepers.filter { $0.end <= state.nanoseconds }.sorted { $0.end < $1.end }
            state.sleepers.removeAll { $0.end <= state.nanoseconds }
            return (due, state.watchers)
        }
        for sleeper in due { sleeper.wake(nil) }
        for wake in watchers { wake() }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to 0...UInt64.max.
    public var nanosecondsClamped: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (product, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product.saturatingAdd(UInt64(attoseconds / 1_000_000_000))
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` where that would overflow (deadlines far away).
    public func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    /// `self - other`, or 0 where `other` is larger (the time left before a deadline passed).
    public func subtractingClamped(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}
