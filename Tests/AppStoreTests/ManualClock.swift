import Foundation
import Synchronization

/// A clock tests set and move by hand; `now` is what the code under test reads.
final class ManualClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date) { current = Mutex(start) }

    /// The current time.
    func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward by `seconds`.
    func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
