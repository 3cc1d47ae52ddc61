import Observability
import Synchronization

/// Reads waiting for the view to apply a feed position (CheckAccess `min_position`): each is
/// called once, with true when the view got there, false when its time ran out first.
final class PositionWaiters: Sendable {
    private struct Waiter {
        let id: UInt64
        let position: UInt64
        let done: @Sendable (Bool) -> Void
    }

    private let waiting = Mutex<(next: UInt64, list: [Waiter])>((0, []))

    /// Calls `done(true)` at once when `applied()` (read under this lock) is at or past
    /// `position`; else when `reached` passes it, or `done(false)` after `within` on `clock`.
    func wait(
        for position: UInt64, applied: () -> UInt64?, within: Duration, clock: any ServiceClock,
        _ done: @escaping @Sendable (Bool) -> Void
    ) {
        let id = waiting.withLock { state -> UInt64? in
            if let current = applied(), current >= position { return nil }
            state.next += 1
            state.list.append(Waiter(id: state.next, position: position, done: done))
            return state.next
        }
        guard let id else { return done(true) }
        Task {
            try? await clock.sleep(for: within)
            let expired = waiting.withLock { state -> Waiter? in
                guard let index = state.list.firstIndex(where: { $0.id == id }) else { return nil }
                return state.list.remove(at: index)
            }
            expired?.done(false)
        }
    }

    /// The view applied `position`: the reads waiting for it or an earlier one go on.
    func reached(_ position: UInt64) {
        let due = waiting.withLock { state -> [Waiter] in
            guard !state.list.isEmpty else { return [] }
            let due = state.list.filter { $0.position <= position }
            state.list.removeAll { $0.position <= position }
            return due
        }
        for waiter in due { waiter.done(true) }
    }

    /// How many reads wait now.
    var count: Int { waiting.withLock { $0.list.count } }
}
