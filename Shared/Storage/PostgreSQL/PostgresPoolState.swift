/// The pool's bookkeeping as a value with no I/O: which slots are idle, who waits in what order.
///
/// `Slot` is a pooled connection and `Waiter` whatever resumes a waiting caller; the pool keeps
/// one of these behind a lock and performs the actions its methods return.
struct PostgresPoolState<Slot, Waiter> {
    enum Checkout {
        /// Use this slot now.
        case ready(Slot)
        /// The waiter was queued; `checkin`, `cancel` or `close` will hand it back.
        case queued
        /// The pool is closed.
        case closed
    }

    enum Checkin {
        /// Resume this waiter with the slot.
        case handOver(Waiter)
        /// The slot went back to the idle list.
        case idle
        /// The pool is closed: close the slot's connection.
        case retire
    }

    private var idle: [Slot]
    /// Waiting callers, oldest first. Removal from the front is O(n), fine for the few waiters a
    /// bounded service has.
    private var waiters: [(id: Int, waiter: Waiter)] = []
    private(set) var isClosed = false

    /// A pool of `slots`, all idle.
    init(slots: [Slot]) { idle = slots }

    /// An idle slot, or else the waiter queued behind the earlier ones.
    mutating func checkout(id: Int, waiter: Waiter) -> Checkout {
        if isClosed { return .closed }
        if let slot = idle.popLast() { return .ready(slot) }
        waiters.append((id, waiter))
        return .queued
    }

    /// Returns a slot: to the oldest waiter, else to the idle list.
    mutating func checkin(_ slot: Slot) -> Checkin {
        if isClosed { return .retire }
        if !waiters.isEmpty { return .handOver(waiters.removeFirst().waiter) }
        idle.append(slot)
        return .idle
    }

    /// Removes the waiter `id` if it is still queued; the caller then resumes it.
    mutating func cancel(id: Int) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).waiter
    }

    /// Closes the pool: returns the waiters to fail and the idle slots to retire.
    mutating func close() -> (waiters: [Waiter], idle: [Slot]) {
        isClosed = true
        defer {
            waiters = []
            idle = []
        }
        return (waiters.map(\.waiter), idle)
    }
}

extension PostgresPoolState: Sendable where Slot: Sendable, Waiter: Sendable {}
extension PostgresPoolState.Checkout: Sendable where Slot: Sendable, Waiter: Sendable {}
extension PostgresPoolState.Checkin: Sendable where Slot: Sendable, Waiter: Sendable {}
