import Synchronization

/// A sleeper that returns at once and remembers every wait it was asked for, so retry tests
/// never really wait. With `failing` set it throws `CancellationError` instead, as a cancelled
/// task's sleep would.
public final class RecordingSleeper: Sendable {
    private let waits = Mutex<[Duration]>([])
    private let failing: Bool

    /// A sleeper that returns at once, or throws when `failing`.
    public init(failing: Bool = false) { self.failing = failing }

    /// The waits asked for, in order.
    public var requested: [Duration] { waits.withLock { $0 } }

    /// Records `duration`, then returns (or throws `CancellationError` when failing).
    public func sleep(_ duration: Duration) async throws {
        waits.withLock { $0.append(duration) }
        if failing { throw CancellationError() }
    }
}
