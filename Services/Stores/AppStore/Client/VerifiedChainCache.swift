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

    /// Bytes compared in full (`memcmp`) but hashed by their length and at most 320 of them (the
    /// first 256, where certificates and headers differ by serial number, and the last 64), once
    /// per key. Only pairs that verified, and their headers, become keys, so the table stays small.
    struct Key: Hashable, Sendable {
        let bytes: [UInt8]
        /// `digest` of the bytes, taken once: a key kept with a header is looked up again on
        /// every warm verification.
        private let digest: Int

        init(bytes: [UInt8]) {
            self.bytes = bytes
            digest = bytes.withUnsafeBytes(Key.digest)
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.digest == rhs.digest
                && lhs.bytes.withUnsafeBytes { left in rhs.bytes.withUnsafeBytes { right in same(left, right) } }
        }

        func hash(into hasher: inout Hasher) { hasher.combine(digest) }

        /// What `hash(into:)` feeds the hasher for these bytes.
        static func combine(_ raw: UnsafeRawBufferPointer, into hasher: inout Hasher) {
            hasher.combine(raw.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.prefix(256)))
            if raw.count > 256 { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.suffix(64))) }
        }

        /// A hash of `raw` as a header index keys it (the same bytes `hash(into:)` reads).
        static func digest(_ raw: UnsafeRawBufferPointer) -> Int {
            var hasher = Hasher()
            combine(raw, into: &hasher)
            return hasher.finalize()
        }

        static func same(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
            left.hasSameBytes(as: right)
        }
    }

    /// A header segment that named a pair.
    private struct KnownHeader {
        let header: [UInt8]
        let pair: Key
        /// SHA-256 after `header "."`: a signing input with this header hashes its payload only.
        let prefix: Digest.SHA256Prefix
    }

    /// What a known header segment gives a verification: the pair its x5c named (leaf DER
    /// followed by intermediate DER), the pair's entry when it is still fresh, and the SHA-256
    /// state after the segment and its dot.
    struct Known {
        let pair: [UInt8]
        let entry: Entry?
        let prefix: Digest.SHA256Prefix
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var order: [Key] = []
        /// Header segments by `Key.digest` of their bytes (so that a lookup hashes the segment
        /// where it lies, without a copy), each with the pair its x5c named.
        var headers: [Int: [KnownHeader]] = [:]
        /// Pair → its header segments, oldest first.
        var headersOfPair: [Key: [[UInt8]]] = [:]

        mutating func remove(_ pair: Key) {
            entries[pair] = nil
            for header in headersOfPair.removeValue(forKey: pair) ?? [] { forget(header) }
        }

        mutating func forget(_ header: [UInt8]) {
            let digest = header.withUnsafeBytes(Key.digest)
            headers[digest]?.removeAll { $0.header == header }
            if headers[digest]?.isEmpty == true { headers[digest] = nil }
        }

        func known(_ header: UnsafeRawBufferPointer, digest: Int) -> KnownHeader? {
            headers[digest]?.first { $0.header.withUnsafeBytes { Key.same($0, header) } }
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

    /// The cached pair that `header`, a JWS header segment, named when it was inserted, if both
    /// are still here, with its entry when that was added less than `lifetime` before `now`.
    /// Changes nothing: a pair gone stale is for `lookup` to remove.
    func known(header: UnsafeRawBufferPointer, now: Date) -> Known? {
        guard capacity > 0 else { return nil }
        let digest = Key.digest(header)
        return state.withLock { state in
            guard let known = state.known(header, digest: digest) else { return nil }
            let entry = state.entries[known.pair].flatMap {
                now.timeIntervalSince($0.added) < lifetime.timeInterval ? $0 : nil
            }
            return Known(pair: known.pair.bytes, entry: entry, prefix: known.prefix)
        }
    }

    /// Caches `entry` for the pair `key` and remembers `header`, the JWS header segment that
    /// named it.
    func insert(_ key: [UInt8], _ entry: Entry, header: [UInt8]) {
        guard capacity > 0 else { return }
        let key = Key(bytes: key)
        let digest = header.withUnsafeBytes(Key.digest)
        let prefix = (header + [UInt8(ascii: ".")]).withUnsafeBytes { Digest.SHA256Prefix($0) }
        state.withLock { state in
            if state.entries.updateValue(entry, forKey: key) == nil { state.order.append(key) }
            if let prefix, header.withUnsafeBytes({ state.known($0, digest: digest) }) == nil {
                state.headers[digest, default: []].append(KnownHeader(header: header, pair: key, prefix: prefix))
                state.headersOfPair[key, default: []].append(header)
                if state.headersOfPair[key]!.count > Self.headersPerPair {
                    state.forget(state.headersOfPair[key]!.removeFirst())
                }
            }
            while state.order.count > capacity { state.remove(state.order.removeFirst()) }
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

extension UnsafeRawBufferPointer {
    /// Whether `other` holds the same bytes (same count, then `memcmp`).
    func hasSameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        guard count == other.count else { return false }
        guard let a = baseAddress, let b = other.baseAddress else { return true }
        return memcmp(a, b, count) == 0
    }
}
