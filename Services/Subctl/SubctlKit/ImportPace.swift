import Synchronization

/// The pace an import's concurrent calls share: at most `rate` starts a second (a token bucket
/// holding one token, refilled every `1 / rate` s), and a pause that holds every call back when
/// a store's rate limit names a wait.
///
/// The rules are the value `State`; this class only keeps it behind a lock, so the workers of
/// one run share it.
public final class ImportPace: Sendable {
    /// When calls may start. Pure: the instants come in, no clock is read.
    public struct State: Sendable, Equatable {
        /// Time between two starts.
        public let spacing: Duration
        /// The earliest start of the next call (nil before the first).
        public private(set) var next: ContinuousClock.Instant?
        /// The end of the pause a rate limit began (nil when none did).
        public private(set) var pausedUntil: ContinuousClock.Instant?

        public init(spacing: Duration) {
            self.spacing = spacing
        }

        /// Takes the next start at `now` or later: not before the pause ends, and `spacing`
        /// after the start handed out before it.
        public mutating func reserve(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
            var start = now
            if let next, next > start { start = next }
            if let pausedUntil, pausedUntil > start { start = pausedUntil }
            next = start + spacing
            return start
        }

        /// Holds every call back until `end` (a pause that ends later stays).
        public mutating func pause(until end: ContinuousClock.Instant) {
            if pausedUntil.map({ end > $0 }) ?? true { pausedUntil = end }
        }

        /// Whether a pause begun after `start` was handed out holds it back.
        public func holds(_ start: ContinuousClock.Instant) -> Bool {
            pausedUntil.map { $0 > start } ?? false
        }
    }

    private let state: Mutex<State>

    /// A pace of `rate` calls a second (more than 0).
    public init(rate: Double) {
        state = Mutex(State(spacing: .seconds(1 / rate)))
    }

    /// Waits (through `sleep`) until a call may start: its turn within the rate, and past any
    /// pause, also one begun while it waited.
    public func admit(
        now: () -> ContinuousClock.Instant, sleep: (Duration) async -> Void
    ) async {
        while true {
            let start = state.withLock { $0.reserve(now: now()) }
            let current = now()
            if start > current { await sleep(start - current) }
            if !state.withLock({ $0.holds(start) }) { return }
        }
    }

    /// Holds every call back for `wait` from `now`.
    public func pause(for wait: Duration, now: ContinuousClock.Instant) {
        state.withLock { $0.pause(until: now + wait) }
    }
}
