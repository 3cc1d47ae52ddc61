import CShims
import Glibc

/// Storage for the view that stays close to what it holds at millions of entries: records in
/// fixed-size chunks (growth never copies a table nor leaves half of one unused), texts packed
/// into a byte arena, and hash indexes of 4-byte slots.

/// A growable array kept in chunks of `chunkSize` elements.
struct ChunkedArray<Element: BitwiseCopyable & Sendable>: Sendable {
    private static var shift: Int { 14 }
    static var chunkSize: Int { 1 << shift }
    private static var mask: Int { chunkSize - 1 }

    private var chunks: [ContiguousArray<Element>] = []
    private(set) var count = 0

    /// Appends `element` and returns its index.
    @discardableResult
    mutating func append(_ element: Element) -> Int {
        if count & Self.mask == 0 {
            var chunk = ContiguousArray<Element>()
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(element)
        count += 1
        return count - 1
    }

    subscript(index: Int) -> Element {
        get { chunks[index >> Self.shift][index & Self.mask] }
        set { chunks[index >> Self.shift][index & Self.mask] = newValue }
    }

    /// Starts loading element `index` (an index below `count`) into cache: every line it spans.
    func prefetch(_ index: Int) {
        chunks[index >> Self.shift].withUnsafeBytes { chunk in
            let start = (index & Self.mask) * MemoryLayout<Element>.stride
            cshim_prefetch(chunk.baseAddress! + start)
            cshim_prefetch(chunk.baseAddress! + start + MemoryLayout<Element>.size - 1)
        }
    }
}

/// Texts stored one after another, each behind its length (a varint) and followed by a NUL (so
/// that it can be lent as a C string), in chunks of 1 MiB (a longer text gets a chunk of its
/// own). A text's reference is its chunk and offset; texts are never removed.
struct TextArena: Sendable {
    static let chunkBytes = 1 << 20
    private var chunks: [ContiguousArray<UInt8>] = []

    /// Stores `text` and returns its reference.
    mutating func store(_ text: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var headerCount = 1
        while text.count >> (7 * headerCount) > 0 { headerCount += 1 }
        let needed = headerCount + text.count + 1
        if chunks.isEmpty || chunks[chunks.count - 1].capacity - chunks[chunks.count - 1].count < needed {
            var chunk = ContiguousArray<UInt8>()
            chunk.reserveCapacity(max(Self.chunkBytes, needed))
            chunks.append(chunk)
        }
        let last = chunks.count - 1
        let offset = chunks[last].count
        var length = text.count
        repeat {
            chunks[last].append(UInt8(length & 0x7F) | (length > 0x7F ? 0x80 : 0))
            length >>= 7
        } while length > 0
        chunks[last].append(contentsOf: text)
        chunks[last].append(0)
        return UInt64(last) << 32 | UInt64(offset)
    }

    /// Runs `body` on the bytes of the text at `reference`.
    func withText<T>(_ reference: UInt64, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        chunks[Int(reference >> 32)].withUnsafeBufferPointer { chunk in
            var index = Int(reference & 0xFFFF_FFFF)
            var length = 0
            var shift = 0
            while true {
                let byte = chunk[index]
                index += 1
                length |= Int(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            return body(UnsafeBufferPointer(rebasing: chunk[index..<index + length]))
        }
    }

    /// Runs `body` on the text at `reference` as a NUL-terminated C string.
    func withCString<T>(_ reference: UInt64, _ body: (UnsafePointer<CChar>) -> T) -> T {
        withText(reference) { bytes in
            body(UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self))
        }
    }

    mutating func store(_ text: String) -> UInt64 {
        withUTF8Bytes(text) { store($0) }
    }

    func string(_ reference: UInt64) -> String {
        withText(reference) { String(decoding: $0, as: UTF8.self) }
    }

    /// Starts loading into cache the first `byteCount` bytes of the text at `reference` and its
    /// length.
    func prefetch(_ reference: UInt64, byteCount: Int) {
        chunks[Int(reference >> 32)].withUnsafeBytes { chunk in
            let start = Int(reference & 0xFFFF_FFFF)
            var offset = 0
            repeat {
                cshim_prefetch(chunk.baseAddress! + min(start + offset, chunk.count - 1))
                offset += 64
            } while offset < byteCount + 3
        }
    }

    func equals(_ reference: UInt64, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        withText(reference) { stored in
            stored.count == bytes.count
                && (bytes.isEmpty || memcmp(stored.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
    }
}

/// An open-addressing hash index (linear probing, at most half full) from a key's hash to an
/// entry index in some other table, in 4 bytes a slot. Entries are never removed. The table
/// does not keep keys: lookups are told how to compare an entry, growth how to hash one.
struct SlotTable: Sendable {
    /// Entry index + 1; 0 is an empty slot.
    private var slots = [UInt32](repeating: 0, count: 16)
    private(set) var count = 0

    /// Where a lookup of one hash stands: the next slot to look at.
    struct Probe {
        fileprivate var slot: Int
    }

    /// A lookup of the entries inserted with `hash`; call `next` until it answers nil. A loop
    /// rather than a closure, so that callers compare entries without capturing their tables.
    func probe(_ hash: UInt64) -> Probe { Probe(slot: Int(truncatingIfNeeded: hash) & (slots.count - 1)) }

    /// The next candidate entry of the probe, or nil when there are no more. Candidates include
    /// entries with other hashes: the caller compares keys.
    func next(_ probe: inout Probe) -> Int? {
        let entry = slots[probe.slot]
        guard entry != 0 else { return nil }
        probe.slot = (probe.slot + 1) & (slots.count - 1)
        return Int(entry) - 1
    }

    /// Starts loading into cache the slot a lookup of `hash` reads first.
    func prefetch(_ hash: UInt64) {
        slots.withUnsafeBufferPointer {
            cshim_prefetch($0.baseAddress! + (Int(truncatingIfNeeded: hash) & ($0.count - 1)))
        }
    }

    /// The first candidate a lookup of `hash` would compare, if any (a hint: it may be another
    /// key's entry).
    func first(_ hash: UInt64) -> Int? {
        var probe = probe(hash)
        return next(&probe)
    }

    /// Indexes entry `index` under `hash`; `hashOf` gives the hash of any entry already in (to
    /// grow the table).
    mutating func insert(_ index: Int, hash: UInt64, hashOf: (Int) -> UInt64) {
        precondition(index < Int(UInt32.max), "the view holds at most 4 billion entries of a kind")
        if (count + 1) * 2 > slots.count {
            let old = slots
            slots = [UInt32](repeating: 0, count: old.count * 2)
            for entry in old where entry != 0 { place(entry, hash: hashOf(Int(entry) - 1)) }
        }
        place(UInt32(index + 1), hash: hash)
        count += 1
    }

    private mutating func place(_ entry: UInt32, hash: UInt64) {
        slots.withUnsafeMutableBufferPointer { slots in
            let mask = slots.count - 1
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = entry
        }
    }
}

/// Hashes for the view's indexes, seeded per process so that nobody can choose ids that collide.
enum ViewHash {
    static let seed = UInt64.random(in: 0...UInt64.max)

    static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x = x &* 0xff51_afd7_ed55_8ccd
        x ^= x >> 33
        x = x &* 0xc4ce_b9fe_1a85_ec53
        x ^= x >> 33
        return x
    }

    static func words(_ first: UInt64, _ second: UInt64) -> UInt64 {
        mix(mix(first ^ seed) &+ second)
    }

    static func bytes(_ bytes: UnsafeBufferPointer<UInt8>, tag: UInt64) -> UInt64 {
        var hash = mix(seed ^ tag ^ UInt64(bytes.count) << 32)
        var index = 0
        while index + 8 <= bytes.count {
            hash = mix(hash ^ UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self))
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count {
            tail |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        return mix(hash ^ tail)
    }
}
