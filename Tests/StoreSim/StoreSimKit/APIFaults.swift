import HTTP
import Synchronization

/// Failures a store's API answers instead of the real answer, for a while: the next `count`
/// calls get HTTP `status` (Apple's and Google's error bodies for it), to show that nothing is
/// lost while a store is down.
public final class APIFaults: Sendable {
    private let pending = Mutex<(count: Int, status: Int)>((0, 500))

    public init() {}

    public func inject(count: Int, status: Int) { pending.withLock { $0 = (max(0, count), status) } }

    /// Calls not answered yet with a failure.
    public var remaining: Int { pending.withLock { $0.count } }

    /// The failure for this call, if one is due; counts it.
    func take() -> Int? {
        pending.withLock { pending in
            guard pending.count > 0 else { return nil }
            pending.count -= 1
            return pending.status
        }
    }
}
