import CShims
import Foundation
import Glibc
import Synchronization

/// Storage for the view that stays close to what it holds at millions of entries: records in
/// fixed-size chunks (growth never copies a table nor leaves half of one unused), texts packed
/// into a byte arena, and hash indexes of 8-byte slots.
///
/// The memory is managed by hand, in blocks of 2 MiB aligned to 2 MiB that the kernel is asked
/// to back with transparent huge pages: a lookup touches a few random places in hundreds of
/// megabytes, and with 4 KiB pages each would also miss the TLB. The types are noncopyable and
/// free their blocks when they go; reading them involves no reference counting.

/// Blocks for the view's tables.
enum ViewMemory {
    static let blockBytes = 2 << 20

    /// `byteCount` bytes (rounded up to whole blocks) aligned to a block, advised for huge
    /// pages; contents undefined. Free with `free`. A single block comes from the supply of
    /// ready blocks while one runs.
    static func allocate(_ byteCount: Int) -> UnsafeMutableRawPointer {
        if byteCount == blockBytes, let ready = BlockSupply.current.withLock({ $0 })?.take() { return ready }
        return fresh(byteCount)
    }

    fileprivate static func fresh(_ byteCount: Int) -> UnsafeMutableRawPointer {
        let rounded = (max(byteCount, 1) + blockBytes - 1) / blockBytes * blockBytes
        var memory: UnsafeMutableRawPointer?
        precondition(posix_memalign(&memory, blockBytes, rounded) == 0, "the view is out of memory")
        _ = madvise(memory, rounded, MADV_HUGEPAGE)
        return memory!
    }

    /// Tables of at least this many bytes are mapped from the kernel, zeroed by it.
    static let mappedBytes = 32 << 20

    /// `byteCount` zeroed bytes, block-aligned when large; free with `freeZeroed` and the same
    /// count. Large tables are fresh mappings (the kernel's zero pages, nothing to clear), made
    /// resident by the running supply's thread when there is one.
    static func allocateZeroed(_ byteCount: Int) -> UnsafeMutableRawPointer {
        guard byteCount >= mappedBytes else {
            let memory = byteCount < blockBytes ? malloc(byteCount)! : fresh(byteCount)
            memset(memory, 0, byteCount)
            return memory
        }
        let memory = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        precondition(memory != MAP_FAILED, "the view is out of memory")
        _ = madvise(memory, byteCount, MADV_HUGEPAGE)
        BlockSupply.current.withLock({ $0 })?.populate(memory!, byteCount)
        return memory!
    }

    static func freeZeroed(_ memory: UnsafeMutableRawPointer, _ byteCount: Int) {
        if byteCount >= mappedBytes { munmap(memory, byteCount) } else { free(memory) }
    }
}

/// Memory made resident ahead of need by a thread of its own while a snapshot loads: blocks
/// kept `ahead` in hand, and large tables' pages faulted in (`MADV_POPULATE_WRITE`, which
/// leaves what is written there as it is). Touching fresh memory for the first time is the
/// kernel clearing it page by page — a quarter of a snapshot's load at millions of accounts —
/// and this moves that work to the other core.
final class BlockSupply: Sendable {
    /// The supply `ViewMemory` takes blocks from, if one runs.
    static let current = Mutex<BlockSupply?>(nil)
    static let ahead = 32

    private struct State {
        /// Ready blocks' addresses.
        var ready: [UInt] = []
        /// Regions to fault in: address and length.
        var regions: [(UInt, Int)] = []
        var stopped = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// Starts a supply and makes it the current one.
    static func start() -> BlockSupply {
        let supply = BlockSupply()
        current.withLock { $0 = supply }
        Thread.detachNewThread { supply.run() }
        return supply
    }

    /// A ready block, or nil when none is (the caller makes its own).
    func take() -> UnsafeMutableRawPointer? {
        let block = state.withLock { $0.ready.popLast() }
        wake.signal()
        return block.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
    }

    /// Has the pages of `memory` faulted in.
    func populate(_ memory: UnsafeMutableRawPointer, _ byteCount: Int) {
        state.withLock { $0.regions.append((UInt(bitPattern: Int(bitPattern: memory)), byteCount)) }
        wake.signal()
    }

    /// Stops the thread, frees the blocks nobody took, and stops being the current supply.
    func stop() {
        BlockSupply.current.withLock { if $0 === self { $0 = nil } }
        state.withLock { $0.stopped = true }
        wake.signal()
        done.wait()
        for block in state.withLock({ $0.ready }) { free(UnsafeMutableRawPointer(bitPattern: block)) }
    }

    private func run() {
        while true {
            let (stopped, region, short) = state.withLock { state in
                (state.stopped, state.regions.popLast(), state.ready.count < Self.ahead)
            }
            if stopped { break }
            if let (address, length) = region {
                // 23 is MADV_POPULATE_WRITE (Linux 5.14); older kernels fault on first use.
                _ = madvise(UnsafeMutableRawPointer(bitPattern: address), length, 23)
            } else if short {
                let block = ViewMemory.fresh(ViewMemory.blockBytes)
                _ = madvise(block, ViewMemory.blockBytes, 23)
                state.withLock { $0.ready.append(UInt(bitPattern: Int(bitPattern: block))) }
            } else {
                wake.wait()
            }
        }
        done.signal()
    }
}

/// A growable buffer of plain values in memory of its own (small tables of chunk addresses).
struct PlainBuffer<Element: BitwiseCopyable>: ~Copyable {
    private(set) var base: UnsafeMutablePointer<Element>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 16) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    mutating func append(_ element: Element) {
        if count == capacity {
            let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            grown.initialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        base[count] = element
        count += 1
    }

    subscript(index: Int) -> Element { base[index] }

    /// The last element, which must exist.
    var last: Element {
        get { base[count - 1] }
        set { base[count - 1] = newValue }
    }
}

/// A growable array kept in 2 MiB chunks (as many elements as fit in one).
struct ChunkedArray<Element: BitwiseCopyable>: ~Copyable {
    static var chunkSize: Int { ViewMemory.blockBytes / MemoryLayout<Element>.stride }

    private var chunks = PlainBuffer<UnsafeMutablePointer<Element>>()
    private(set) var count = 0

    init() {}

    deinit {
        for index in 0..<chunks.count { free(chunks[index]) }
    }

    /// Appends `element` and returns its index.
    @discardableResult
    mutating func append(_ element: Element) -> Int {
        if count == chunks.count * Self.chunkSize {
            chunks.append(
                ViewMemory.allocate(ViewMemory.blockBytes).bindMemory(to: Element.self, capacity: Self.chunkSize))
        }
        chunks[count / Self.chunkSize][count % Self.chunkSize] = element
        count += 1
        return count - 1
    }

    /// Element `index`, which must be below `count`.
    subscript(index: Int) -> Element {
        get { chunks[index / Self.chunkSize][index % Self.chunkSize] }
        set { chunks[index / Self.chunkSize][index % Self.chunkSize] = newValue }
    }

    /// Writes the count and the elements, chunk by chunk.
    func write(to writer: inout CheckpointWriter) throws(CheckpointError) {
        writer.integer(UInt64(count))
        var left = count
        for index in 0..<chunks.count {
            let elements = min(left, Self.chunkSize)
            try writer.region(
                UnsafeRawBufferPointer(start: chunks[index], count: elements * MemoryLayout<Element>.stride))
            left -= elements
        }
    }

    /// Reads what `write` wrote.
    init(reading reader: inout CheckpointReader) throws(CheckpointError) {
        let total = try reader.count(limit: Int(UInt32.max))
        var left = total
        while left > 0 {
            let elements = min(left, Self.chunkSize)
            let chunk = ViewMemory.allocate(ViewMemory.blockBytes)
            chunks.append(chunk.bindMemory(to: Element.self, capacity: Self.chunkSize))
            try reader.region(into: chunk, count: elements * MemoryLayout<Element>.stride)
            left -= elements
        }
        count = total
    }

    /// Starts loading element `index` (an index below `count`) into cache: every line it spans.
    func prefetch(_ index: Int) {
        let element = UnsafeRawPointer(chunks[index / Self.chunkSize] + index % Self.chunkSize)
        cshim_prefetch(element)
        cshim_prefetch(element + MemoryLayout<Element>.size - 1)
    }
}

/// Texts stored one after another, each behind its length (a varint) and followed by a NUL (so
/// that it can be lent as a C string), in 2 MiB chunks (a longer text gets a chunk of its own).
/// A text's reference is its chunk and offset; texts are never removed (`erase` zeroes one).
struct TextArena: ~Copyable {
    private var chunks = PlainBuffer<UnsafeMutablePointer<UInt8>>()
    /// Each chunk's size, and the bytes it holds (the last one's is `used`).
    private var sizes = PlainBuffer<Int>()
    private var filled = PlainBuffer<Int>()
    /// Bytes used and available in the last chunk.
    private var used = 0
    private var capacity = 0

    init() {}

    deinit {
        for index in 0..<chunks.count { free(chunks[index]) }
    }

    /// Stores `text` and returns its reference.
    mutating func store(_ text: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var headerCount = 1
        while text.count >> (7 * headerCount) > 0 { headerCount += 1 }
        let needed = headerCount + text.count + 1
        if chunks.count == 0 || capacity - used < needed {
            // Each chunk keeps `prefetchSlack` bytes unused at its end, so that a prefetch of a
            // text's first bytes never points past the chunk.
            let size = max(ViewMemory.blockBytes, needed + Self.prefetchSlack)
            if chunks.count > 0 { filled.last = used }
            chunks.append(ViewMemory.allocate(size).bindMemory(to: UInt8.self, capacity: size))
            sizes.append(size)
            filled.append(0)
            used = 0
            capacity = size - Self.prefetchSlack
        }
        let chunk = chunks[chunks.count - 1]
        let offset = used
        var length = text.count
        repeat {
            chunk[used] = UInt8(length & 0x7F) | (length > 0x7F ? 0x80 : 0)
            used += 1
            length >>= 7
        } while length > 0
        if let source = text.baseAddress { (chunk + used).initialize(from: source, count: text.count) }
        used += text.count
        chunk[used] = 0
        used += 1
        return UInt64(chunks.count - 1) << 32 | UInt64(offset)
    }

    /// Writes each chunk's size and the bytes it holds.
    func write(to writer: inout CheckpointWriter) throws(CheckpointError) {
        writer.integer(UInt64(chunks.count))
        for index in 0..<chunks.count {
            let held = index == chunks.count - 1 ? used : filled[index]
            writer.integer(UInt64(sizes[index]))
            try writer.region(UnsafeRawBufferPointer(start: chunks[index], count: held))
        }
    }

    /// Reads what `write` wrote; the last chunk takes further texts.
    init(reading reader: inout CheckpointReader) throws(CheckpointError) {
        let count = try reader.count(limit: 1 << 24)
        for _ in 0..<count {
            let size = try reader.count(limit: 1 << 34)
            guard size >= ViewMemory.blockBytes else { throw CheckpointError("a text chunk of \(size) bytes") }
            let chunk = ViewMemory.allocate(size).bindMemory(to: UInt8.self, capacity: size)
            chunks.append(chunk)
            sizes.append(size)
            let held = try reader.region(into: UnsafeMutableRawPointer(chunk), limit: size - Self.prefetchSlack)
            filled.append(held)
            used = held
            capacity = size - Self.prefetchSlack
        }
    }

    /// Whether `reference` names a whole text inside the arena (its length, its bytes and NUL).
    func contains(_ reference: UInt64) -> Bool {
        let chunk = Int(reference >> 32)
        guard chunk < chunks.count else { return false }
        let held = chunk == chunks.count - 1 ? used : filled[chunk]
        var at = Int(reference & 0xFFFF_FFFF)
        var length = 0
        var shift = 0
        while true {
            guard at < held, shift < 35 else { return false }
            let byte = chunks[chunk][at]
            at += 1
            length |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return at + length < held && chunks[chunk][at + length] == 0
    }

    /// Runs `body` on the bytes of the text at `reference` (one `store` returned).
    func withText<T>(_ reference: UInt64, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        var at = chunks[Int(reference >> 32)] + Int(reference & 0xFFFF_FFFF)
        var length = 0
        var shift = 0
        while true {
            let byte = at.pointee
            at += 1
            length |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return body(UnsafeBufferPointer(start: at, count: length))
    }

    /// Runs `body` on the text at `reference` as a NUL-terminated C string.
    func withCString<T>(_ reference: UInt64, _ body: (UnsafePointer<CChar>) -> T) -> T {
        withText(reference) { bytes in
            body(UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self))
        }
    }

    private static let prefetchSlack = 256

    /// Starts loading into cache the first `byteCount` bytes (at most 192) of the text at
    /// `reference` and its length.
    func prefetch(_ reference: UInt64, byteCount: Int) {
        precondition(byteCount <= 192, "a text prefetch stays within the chunk's slack")
        let start = UnsafeRawPointer(chunks[Int(reference >> 32)] + Int(reference & 0xFFFF_FFFF))
        var offset = 0
        repeat {
            cshim_prefetch(start + offset)
            offset += 64
        } while offset < byteCount + 3
    }

    /// Overwrites the text at `reference` with zeros (its length stays): what the view forgets
    /// is not left in its memory.
    mutating func erase(_ reference: UInt64) {
        withText(reference) { bytes in
            if let start = bytes.baseAddress {
                UnsafeMutablePointer(mutating: start).update(repeating: 0, count: bytes.count)
            }
        }
    }

    mutating func store(_ text: String) -> UInt64 {
        withUTF8Bytes(text) { store($0) }
    }

    func string(_ reference: UInt64) -> String {
        withText(reference) { String(decoding: $0, as: UTF8.self) }
    }

    func equals(_ reference: UInt64, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        withText(reference) { stored in
            stored.count == bytes.count
                && (bytes.isEmpty || memcmp(stored.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
    }
}

/// An open-addressing hash index (linear probing, at most half full) from a key's hash to an
/// entry index in some other table, in 8 bytes a slot: the entry's index and 32 more bits of its
/// hash, so that a lookup passes over other keys' entries without reading them. Entries are
/// never removed. The table does not keep keys: lookups are told how to compare an entry,
/// growth how to hash one.
struct SlotTable: ~Copyable {
    /// Entry index + 1 in the low half (0 is an empty slot), the hash's high half above. A power
    /// of two of them.
    private var slots: UnsafeMutablePointer<UInt64>
    private var slotCount = 16
    private(set) var count = 0

    init() {
        slots = Self.emptySlots(16)
    }

    deinit { ViewMemory.freeZeroed(slots, slotCount * MemoryLayout<UInt64>.stride) }

    /// Writes the slots as they are (they hold hashes of the tables' seed).
    func write(to writer: inout CheckpointWriter) throws(CheckpointError) {
        writer.integer(UInt64(slotCount))
        writer.integer(UInt64(count))
        try writer.region(UnsafeRawBufferPointer(start: slots, count: slotCount * MemoryLayout<UInt64>.stride))
    }

    /// Reads what `write` wrote.
    init(reading reader: inout CheckpointReader) throws(CheckpointError) {
        slots = Self.emptySlots(16)
        let slotCount = try reader.count(limit: 1 << 33)
        let count = try reader.count(limit: slotCount / 2)
        guard slotCount >= 16, slotCount & (slotCount - 1) == 0 else {
            throw CheckpointError("an index of \(slotCount) slots")
        }
        ViewMemory.freeZeroed(slots, 16 * MemoryLayout<UInt64>.stride)
        let bytes = slotCount * MemoryLayout<UInt64>.stride
        let memory = ViewMemory.allocateZeroed(bytes)
        slots = memory.bindMemory(to: UInt64.self, capacity: slotCount)
        self.slotCount = slotCount
        self.count = count
        try reader.region(into: memory, count: bytes)
    }

    /// Makes an empty table large enough for `entries` entries without growing; does nothing to
    /// a table that has entries or is already that large.
    mutating func reserve(_ entries: Int) {
        guard count == 0 else { return }
        var wanted = 16
        while wanted < entries * 2 { wanted *= 2 }
        guard wanted > slotCount else { return }
        ViewMemory.freeZeroed(slots, slotCount * MemoryLayout<UInt64>.stride)
        slots = Self.emptySlots(wanted)
        slotCount = wanted
    }

    /// Whether every slot in use names an entry below `entryCount`, and `count` of them are.
    func entriesBelow(_ entryCount: Int) -> Bool {
        var used = 0
        var highest: UInt64 = 0
        for slot in 0..<slotCount where slots[slot] != 0 {
            used += 1
            highest = max(highest, slots[slot] & 0xFFFF_FFFF)
        }
        return used == count && highest <= UInt64(entryCount)
    }

    private static func emptySlots(_ count: Int) -> UnsafeMutablePointer<UInt64> {
        ViewMemory.allocateZeroed(count * MemoryLayout<UInt64>.stride).bindMemory(to: UInt64.self, capacity: count)
    }

    private static func tag(_ hash: UInt64) -> UInt64 { hash & 0xFFFF_FFFF_0000_0000 }

    /// Where a lookup of one hash stands: the next slot to look at, and the tag to match.
    struct Probe {
        fileprivate var slot: Int
        fileprivate let tag: UInt64
    }

    /// A lookup of the entries inserted with `hash`; call `next` until it answers nil. A loop
    /// rather than a closure, so that callers compare entries without capturing their tables.
    func probe(_ hash: UInt64) -> Probe {
        Probe(slot: Int(truncatingIfNeeded: hash) & (slotCount - 1), tag: Self.tag(hash))
    }

    /// The next candidate entry of the probe, or nil when there are no more. Candidates are the
    /// entries whose hash has the same high half: the caller compares keys.
    func next(_ probe: inout Probe) -> Int? {
        while true {
            let slot = slots[probe.slot]
            guard slot != 0 else { return nil }
            probe.slot = (probe.slot + 1) & (slotCount - 1)
            if Self.tag(slot) == probe.tag { return Int(slot & 0xFFFF_FFFF) - 1 }
        }
    }

    /// Starts loading into cache the slot a lookup of `hash` reads first.
    func prefetch(_ hash: UInt64) {
        cshim_prefetch(slots + (Int(truncatingIfNeeded: hash) & (slotCount - 1)))
    }

    /// The first candidate a lookup of `hash` would compare, if any.
    func first(_ hash: UInt64) -> Int? {
        var probe = probe(hash)
        return next(&probe)
    }

    /// Indexes entry `index` under `hash`; `hashOf` gives the hash of any entry already in (to
    /// grow the table).
    mutating func insert(_ index: Int, hash: UInt64, hashOf: (Int) -> UInt64) {
        precondition(index < Int(UInt32.max), "the view holds at most 4 billion entries of a kind")
        if (count + 1) * 2 > slotCount {
            let old = slots
            let oldCount = slotCount
            slotCount *= 2
            slots = Self.emptySlots(slotCount)
            for slot in 0..<oldCount where old[slot] != 0 {
                let entry = Int(old[slot] & 0xFFFF_FFFF) - 1
                place(entry, hash: hashOf(entry))
            }
            ViewMemory.freeZeroed(old, oldCount * MemoryLayout<UInt64>.stride)
        }
        place(index, hash: hash)
        count += 1
    }

    private mutating func place(_ index: Int, hash: UInt64) {
        let mask = slotCount - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Self.tag(hash) | UInt64(index + 1)
    }
}

/// Hashes for the view's indexes, seeded at random per view (a checkpoint keeps its seed with its
/// indexes) so that nobody can choose ids that collide.
struct ViewHash: Sendable {
    let seed: UInt64

    init(seed: UInt64 = .random(in: 0...UInt64.max)) { self.seed = seed }

    static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x = x &* 0xff51_afd7_ed55_8ccd
        x ^= x >> 33
        x = x &* 0xc4ce_b9fe_1a85_ec53
        x ^= x >> 33
        return x
    }

    func words(_ first: UInt64, _ second: UInt64) -> UInt64 {
        Self.mix(Self.mix(first ^ seed) &+ second)
    }

    func bytes(_ bytes: UnsafeBufferPointer<UInt8>, tag: UInt64) -> UInt64 {
        let mix = Self.mix
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
