import HTTPClient
import Synchronization

/// The answers to a deliverer's requests, from the connection pool's thread to the deliverer:
/// `put` keeps each and tells the first of a batch to start taking them in; `take` hands over
/// all kept so far, and once none are left the next `put` starts another batch. So however many
/// answers arrive together, the deliverer takes them in with one hop.
final class DeliveryAnswers: Sendable {
    typealias Outcome = HTTPConnectionPool.Outcome

    private struct State {
        var kept: [(sequence: UInt64, outcome: Outcome)] = []
        /// Whether a taker was told to come and has not yet found the list empty.
        var taking = false
    }

    private let state = Mutex(State())

    /// Keeps the answer to `sequence`; true when the caller is to start a taker (none is on its
    /// way).
    func put(_ sequence: UInt64, _ outcome: Outcome) -> Bool {
        state.withLock { state in
            state.kept.append((sequence, outcome))
            defer { state.taking = true }
            return !state.taking
        }
    }

    /// Every answer kept, oldest first; none means the taker is done until the next `put`.
    func take() -> [(sequence: UInt64, outcome: Outcome)] {
        state.withLock { state in
            if state.kept.isEmpty { state.taking = false }
            defer { state.kept = [] }
            return state.kept
        }
    }
}
