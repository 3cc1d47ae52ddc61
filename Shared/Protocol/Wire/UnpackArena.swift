internal import CProtobufC
import Glibc

/// Memory protobuf-c unpacks into and packs from: a 64 KiB block per thread handed out by
/// bumping an offset, and given back whole when the scope that took it ends, so that decoding a
/// frame or encoding a message costs no `malloc` or `free` per field. Scopes nest (a request
/// decoded while its envelope is in use): each gives back only what it took.
///
/// What does not fit in the block: protobuf-c's allocations go to `malloc` (and its `free` to
/// `free`); a pack's (`CArena`) are carved out of 64 KiB spill chunks (or a chunk of their own
/// when larger), freed when the scope ends.
enum UnpackArena {
    /// One thread's block, with the allocator protobuf-c is handed (which points back at it).
    struct Block {
        var allocator: ProtobufCAllocator
        var base: UnsafeMutableRawPointer
        var capacity: Int
        var used: Int
        /// Spill chunks of packs, newest last, and the newest one's base and bytes used.
        var spills: [UnsafeMutableRawPointer] = []
        var spill: (base: UnsafeMutableRawPointer, used: Int)?

        /// `byteCount` bytes aligned to `alignment` (a power of two, at most 16) for a pack.
        mutating func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
            if let memory = Self.bump(base, capacity, &used, byteCount, alignment) { return memory }
            if var current = spill,
                let memory = Self.bump(current.base, UnpackArena.blockBytes, &current.used, byteCount, alignment)
            {
                spill = current
                return memory
            }
            // malloc aligns to 16.
            let size = max(byteCount, UnpackArena.blockBytes)
            let chunk = malloc(size)!
            spills.append(chunk)
            if size == UnpackArena.blockBytes { spill = (chunk, byteCount) }
            return chunk
        }

        /// `byteCount` bytes of the region at `base` aligned to `alignment` (`base` is 16-aligned),
        /// nil when they do not fit in its `capacity`.
        static func bump(
            _ base: UnsafeMutableRawPointer, _ capacity: Int, _ used: inout Int, _ byteCount: Int, _ alignment: Int
        ) -> UnsafeMutableRawPointer? {
            let start = (used + alignment - 1) & ~(alignment - 1)
            guard byteCount <= capacity - start else { return nil }
            used = start + byteCount
            return base + start
        }
    }

    static let blockBytes = 64 * 1024
    /// Where the allocator sits in a block (worked out once: a key path's offset is not free).
    private static let allocatorOffset = MemoryLayout<Block>.offset(of: \Block.allocator)!

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(
            pthread_key_create(&key) { block in
                guard let block else { return }
                let typed = block.assumingMemoryBound(to: Block.self)
                typed.pointee.base.deallocate()
                typed.deinitialize(count: 1)
                typed.deallocate()
            } == 0, "pthread_key_create failed")
        return key
    }()

    /// The calling thread's block, made on first use.
    private static func block() -> UnsafeMutablePointer<Block> {
        if let existing = pthread_getspecific(key) { return existing.assumingMemoryBound(to: Block.self) }
        let block = UnsafeMutablePointer<Block>.allocate(capacity: 1)
        block.initialize(
            to: Block(
                allocator: ProtobufCAllocator(
                    alloc: { data, size in
                        let block = data!.assumingMemoryBound(to: Block.self)
                        return Block.bump(block.pointee.base, block.pointee.capacity, &block.pointee.used, size, 16)
                            ?? malloc(size)
                    },
                    free: { data, pointer in
                        guard let pointer else { return }
                        let block = data!.assumingMemoryBound(to: Block.self)
                        let base = UnsafeMutableRawPointer(block.pointee.base)
                        if pointer >= base && pointer < base + block.pointee.capacity { return }
                        Glibc.free(pointer)
                    },
                    allocator_data: nil),
                base: .allocate(byteCount: blockBytes, alignment: 16), capacity: blockBytes, used: 0))
        block.pointee.allocator.allocator_data = UnsafeMutableRawPointer(block)
        pthread_setspecific(key, block)
        return block
    }

    /// Runs `body` with the calling thread's block; what was taken from it (and the spill chunks
    /// made) during `body` is given back after it.
    static func withBlock<T, E: Error>(_ body: (UnsafeMutablePointer<Block>) throws(E) -> T) throws(E) -> T {
        let block = block()
        let (used, spills, spill) = (block.pointee.used, block.pointee.spills.count, block.pointee.spill)
        defer {
            block.pointee.used = used
            if block.pointee.spills.count != spills {
                for chunk in block.pointee.spills[spills...] { free(chunk) }
                block.pointee.spills.removeSubrange(spills...)
            }
            block.pointee.spill = spill
        }
        return try body(block)
    }

    /// Runs `body` with the calling thread's allocator (see `withBlock`).
    static func withAllocator<T, E: Error>(
        _ body: (UnsafeMutablePointer<ProtobufCAllocator>) throws(E) -> T
    ) throws(E) -> T {
        try withBlock { (block) throws(E) -> T in
            let allocator = UnsafeMutableRawPointer(block) + allocatorOffset
            return try body(allocator.assumingMemoryBound(to: ProtobufCAllocator.self))
        }
    }
}

/// The C strings, sub-structs and pointer arrays handed to a protobuf-c struct while it is
/// packed: uninitialized memory of the thread's `UnpackArena` block, valid until the
/// `CArena.scoped` call that made the arena returns.
struct CArena {
    private let block: UnsafeMutablePointer<UnpackArena.Block>

    /// Calls `body` with an arena whose memory is given back when `body` returns.
    static func scoped<R>(_ body: (CArena) -> R) -> R {
        UnpackArena.withBlock { body(CArena(block: $0)) }
    }

    /// Uninitialized, correctly aligned memory for `count` values of `type`. Only for C types
    /// that need no deinitialization.
    func allocate<T>(_ type: T.Type, count: Int = 1) -> UnsafeMutablePointer<T> {
        block.pointee.allocate(byteCount: MemoryLayout<T>.stride * count, alignment: MemoryLayout<T>.alignment)
            .bindMemory(to: type, capacity: count)
    }

    /// A NUL-terminated copy of `text`.
    func string(_ text: String) -> UnsafeMutablePointer<CChar> {
        var text = text
        return text.withUTF8 { utf8 in
            let copy = block.pointee.allocate(byteCount: utf8.count + 1, alignment: 1)
            if let source = utf8.baseAddress { copy.copyMemory(from: source, byteCount: utf8.count) }
            copy.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return copy.bindMemory(to: CChar.self, capacity: utf8.count + 1)
        }
    }
}
