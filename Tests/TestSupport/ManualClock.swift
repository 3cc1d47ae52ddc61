public import Foundation
import Synchronization

/// A clock tests set and move by hand; `now` is what the code under test reads.
public final class ManualClock: Sendable {
    private let current: Mutex<Date>

    /// A clock that reads `start` until it is moved.
    public init(_ start: Date) { current = Mutex(start) }

    /// The current time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
