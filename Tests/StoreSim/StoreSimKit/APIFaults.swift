import Glibc
import HTTP
import Synchronization

/// Failures a store's API gives instead of its real answer, for a while: the next `count` calls
/// get HTTP `status` (with Apple's or Google's error body for it), or are answered only after
/// `delayMilliseconds` (longer than the caller's timeout, that is a timeout); with `matching`,
/// only calls whose path contains it count. They show that nothing is lost while a store is down
/// or slow, and what a slow answer meets when it arrives.
public final class APIFaults: Sendable {
    public enum Fault: Sendable, Equatable {
        case status(Int)
        case delay(milliseconds: Int)
    }

    private let pending = Mutex<(count: Int, fault: Fault, matching: String?)>((0, .status(500), nil))
    private let counts = Mutex<[String: Int]>([:])

    public init() {}

    public func inject(count: Int, _ fault: Fault, matching: String? = nil) {
        pending.withLock { $0 = (max(0, count), fault, matching.flatMap { $0.isEmpty ? nil : $0 }) }
    }

    /// Drops the faults still to come: the next calls get their real answers.
    public func clear() {
        pending.withLock { $0.count = 0 }
    }

    /// Calls not answered yet with the fault.
    public var remaining: Int { pending.withLock { $0.count } }

    /// The calls the API answered (a fault's answer too), by path (which names the transaction
    /// or token asked about), since the simulator started.
    public var calls: [String: Int] { counts.withLock { $0 } }

    /// Answers one call of `path`: with `failure(status)` when a failing status is due, else
    /// with `answer()` — read now, as the store had it when the call came, and sent only after a
    /// due delay (too late for a caller that gave up; stale for one that waited).
    func answer(path: String, failure: (Int) -> HTTPResponse, _ answer: () -> HTTPResponse) -> HTTPResponse {
        counts.withLock { $0[path, default: 0] += 1 }
        let fault = pending.withLock { pending -> Fault? in
            guard pending.count > 0, pending.matching.map({ path.contains($0) }) ?? true else { return nil }
            pending.count -= 1
            return pending.fault
        }
        switch fault {
        case .status(let status)?:
            return failure(status)
        case .delay(let milliseconds)?:
            let response = answer()
            usleep(useconds_t(min(milliseconds, 60_000)) * 1000)
            return response
        case nil:
            return answer()
        }
    }
}
