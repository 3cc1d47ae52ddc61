import Crypto
import Foundation
import Synchronization

/// Certificate pairs (leaf, intermediate) whose path to a trust anchor has been verified, keyed
/// by their DER bytes, so a warm verification skips the two P-384 checks. Bounded (the oldest
/// entry goes first) and time-limited; validity periods are kept so that each payload's own
/// validation time is still checked against them.
final class VerifiedChainCache: Sendable {
    struct Entry: Sendable {
        let leafKey: PublicKey
        /// The intersection of the path's validity periods.
        let notBefore: Date
        let notAfter: Date
        let added: Date
    }

    private struct State {
        var entries: [[UInt8]: Entry] = [:]
        var order: [[UInt8]] = []
    }

    let capacity: Int
    let lifetime: Duration
    private let state = Mutex(State())

    init(capacity: Int, lifetime: Duration) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// The entry for this pair when it was added less than `lifetime` before `now`.
    func lookup(_ key: [UInt8], now: Date) -> Entry? {
        guard capacity > 0 else { return nil }
        return state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            guard now.timeIntervalSince(entry.added) < lifetime.seconds else {
                state.entries[key] = nil
                state.order.removeAll { $0 == key }
                return nil
            }
            return entry
        }
    }

    func insert(_ key: [UInt8], _ entry: Entry) {
        guard capacity > 0 else { return }
        state.withLock { state in
            if state.entries.updateValue(entry, forKey: key) == nil { state.order.append(key) }
            while state.order.count > capacity { state.entries[state.order.removeFirst()] = nil }
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

extension Duration {
    /// The duration in (fractional) seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
