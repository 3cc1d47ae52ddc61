internal import CProtobufC
import Glibc

/// Memory protobuf-c unpacks into: a 64 KiB block per thread handed out by bumping an offset,
/// and given back whole when the unpack that took it is done, so that decoding a frame and its
/// request costs no `malloc` or `free` per field. An allocation that does not fit in the block
/// falls back to `malloc`, and its `free` goes to `free`. Unpacks nest (a request decoded while
/// its envelope is in use): each gives back only what it took.
enum UnpackArena {
    /// One thread's block, with the allocator protobuf-c is handed (which points back at it).
    private struct Block {
        var allocator: ProtobufCAllocator
        var base: UnsafeMutableRawPointer
        var capacity: Int
        var used: Int
    }

    private static let blockBytes = 64 * 1024
    /// Where the allocator sits in a block (worked out once: a key path's offset is not free).
    private static let allocatorOffset = MemoryLayout<Block>.offset(of: \Block.allocator)!

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(
            pthread_key_create(&key) { block in
                guard let block else { return }
                let typed = block.assumingMemoryBound(to: Block.self)
                typed.pointee.base.deallocate()
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
                        let rounded = (size + 15) & ~15
                        if rounded <= block.pointee.capacity - block.pointee.used {
                            defer { block.pointee.used += rounded }
                            return block.pointee.base + block.pointee.used
                        }
                        return malloc(size)
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

    /// Runs `body` with the calling thread's allocator; what protobuf-c took from the block
    /// during `body` is given back after it.
    static func withAllocator<T, E: Error>(
        _ body: (UnsafeMutablePointer<ProtobufCAllocator>) throws(E) -> T
    ) throws(E) -> T {
        let block = block()
        let mark = block.pointee.used
        defer { block.pointee.used = mark }
        let allocator = UnsafeMutableRawPointer(block) + allocatorOffset
        return try body(allocator.assumingMemoryBound(to: ProtobufCAllocator.self))
    }
}
