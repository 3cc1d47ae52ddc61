import Crypto
import Foundation
import HTTPClient
import Synchronization

/// Certificate pairs (leaf, intermediate) whose path to a trust anchor has been verified, keyed
/// by their DER bytes, so a warm verification skips the two P-384 checks. Bounded (the oldest
/// entry goes first) and time-limited; validity periods are kept so that each payload's own
/// validation time is still checked against them.
///
/// Beside each pair it remembers the JWS header segments (base64url, exactly as signed) that
/// named it and passed every header check, so that a warm verification of the same header need
/// not decode it again: a header's checks depend on its bytes alone. At most `headersPerPair`
/// per pair; they go when their pair goes.
final class VerifiedChainCache: Sendable {
    struct Entry: Sendable {
        let leafKey: PublicKey
        /// The intersection of the path's validity periods.
        let notBefore: Date
        let notAfter: Date
        let added: Date
    }

    /// Bytes compared in full but hashed by their length and at most 320 of them (the first
    /// 256, where certificates and headers differ by serial number, and the last 64). Only pairs
    /// that verified, and their headers, become keys, so the table stays small.
    struct Key: Hashable, Sendable {
        let bytes: [UInt8]

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.bytes == rhs.bytes }

        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes.count)
            bytes.withUnsafeBytes { raw in
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.prefix(256)))
                if raw.count > 256 { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.suffix(64))) }
            }
        }
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var order: [Key] = []
        /// Header segment → the pair its x5c named.
        var headers: [Key: Key] = [:]
        /// Pair → its header segments, oldest first.
        var headersOfPair: [Key: [Key]] = [:]

        mutating func remove(_ pair: Key) {
            entries[pair] = nil
            for header in headersOfPair.removeValue(forKey: pair) ?? [] { headers[header] = nil }
        }
    }

    /// How many header segments are remembered for one pair (Apple writes one per chain).
    static let headersPerPair = 4

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
        let key = Key(bytes: key)
        return state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            guard now.timeIntervalSince(entry.added) < lifetime.timeInterval else {
                state.remove(key)
                state.order.removeAll { $0 == key }
                return nil
            }
            return entry
        }
    }

    /// The cached pair (leaf DER followed by intermediate DER) that `header`, a JWS header
    /// segment, named when it was inserted, if both are still here. Changes nothing: whether the
    /// pair is still fresh is for `lookup` to say.
    func pair(forHeader header: ArraySlice<UInt8>) -> [UInt8]? {
        guard capacity > 0 else { return nil }
        let key = Key(bytes: Array(header))
        return state.withLock { $0.headers[key]?.bytes }
    }

    /// Caches `entry` for the pair `key` and remembers `header`, the JWS header segment that
    /// named it.
    func insert(_ key: [UInt8], _ entry: Entry, header: [UInt8]) {
        guard capacity > 0 else { return }
        let key = Key(bytes: key)
        let header = Key(bytes: header)
        state.withLock { state in
            if state.entries.updateValue(entry, forKey: key) == nil { state.order.append(key) }
            if state.headers[header] == nil {
                state.headers[header] = key
                state.headersOfPair[key, default: []].append(header)
                if state.headersOfPair[key]!.count > Self.headersPerPair {
                    state.headers[state.headersOfPair[key]!.removeFirst()] = nil
                }
            }
            while state.order.count > capacity { state.remove(state.order.removeFirst()) }
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
