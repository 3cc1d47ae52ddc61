import Dispatch
import Glibc
import Synchronization

/// Resolves once the process is asked to stop: by SIGTERM or SIGINT, or by `trigger`.
/// Install it once, early in `main`; the signals then no longer kill the process outright.
public final class ShutdownSignal: Sendable {
    private struct State {
        var reason: String?
        var waiters: [CheckedContinuation<String, Never>] = []
    }

    private let state = Mutex(State())
    // Dispatch sources, retained for the life of the object; written once, before it is shared.
    private nonisolated(unsafe) var sources: [any DispatchSourceSignal] = []

    /// A signal that only `trigger` resolves (tests, embedding).
    public init() {}

    /// Catches `signals` (SIGTERM and SIGINT by default) and resolves on the first one.
    public static func installed(for signals: [Int32]? = nil) -> ShutdownSignal {
        let signals = signals ?? [SIGTERM, SIGINT]
        let shutdown = ShutdownSignal()
        let queue = DispatchQueue(label: "shutdown-signals")
        var created: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            let name = number == SIGTERM ? "SIGTERM" : number == SIGINT ? "SIGINT" : "signal \(number)"
            source.setEventHandler { shutdown.trigger(name) }
            source.resume()
            created.append(source)
        }
        shutdown.sources = created
        return shutdown
    }

    /// Resolves the signal with `reason`; later calls change nothing.
    public func trigger(_ reason: String) {
        let waiters = state.withLock { state -> [CheckedContinuation<String, Never>] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    /// True once triggered.
    public var isTriggered: Bool { state.withLock { $0.reason != nil } }

    /// Suspends until the signal resolves; returns why.
    public func wait() async -> String {
        await withCheckedContinuation { continuation in
            let reason = state.withLock { state -> String? in
                if let reason = state.reason { return reason }
                state.waiters.append(continuation)
                return nil
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }
}
