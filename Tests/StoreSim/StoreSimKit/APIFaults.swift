import Glibc
import Synchronization

/// Failures a store's API gives instead of its real answer, for a while: the next `count` calls
/// get HTTP `status` (with Apple's or Google's error body for it), or are answered only after
/// `delayMilliseconds` (longer than the caller's timeout, that is a timeout). They show that
/// nothing is lost while a store is down or slow.
public final class APIFaults: Sendable {
    public enum Fault: Sendable, Equatable {
        case status(Int)
        case delay(milliseconds: Int)
    }

    private let pending = Mutex<(count: Int, fault: Fault)>((0, .status(500)))

    public init() {}

    public func inject(count: Int, _ fault: Fault) { pending.withLock { $0 = (max(0, count), fault) } }

    /// Calls not answered yet with the fault.
    public var remaining: Int { pending.withLock { $0.count } }

    /// The failing status for this call, if one is due; a due delay is waited out here (the
    /// call then gets its real answer, too late for a caller that gave up).
    func take() -> Int? {
        let fault = pending.withLock { pending -> Fault? in
            guard pending.count > 0 else { return nil }
            pending.count -= 1
            return pending.fault
        }
        switch fault {
        case .status(let status): return status
        case .delay(let milliseconds):
            usleep(useconds_t(min(milliseconds, 60_000)) * 1000)
            return nil
        case nil: return nil
        }
    }
}
