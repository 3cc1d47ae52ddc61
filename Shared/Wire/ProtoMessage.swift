internal import CProtobufC
import Glibc

/// A Swift value type for one protobuf message of `proto/`, converted to and from the
/// protobuf-c struct at the boundary.
public protocol ProtoMessage: Sendable {
    /// The fully qualified protobuf name, e.g. `subscriptions.common.v1.HealthRequest`.
    static var protoName: String { get }
    /// Decodes serialized bytes; throws `RPCError(.invalidArgument)` naming what is wrong.
    init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError)
    /// The serialized form.
    func serialized() -> [UInt8]
}

extension ProtoMessage {
    /// Decodes from an array.
    public init(serialized bytes: [UInt8]) throws(RPCError) {
        // Copy out of the closure so the typed throw survives.
        var result: Result<Self, RPCError> = .failure(RPCError(.internal, "unreachable"))
        bytes.withUnsafeBytes { raw in
            result = Result { () throws(RPCError) -> Self in try Self(serialized: raw) }
        }
        self = try result.get()
    }
}

/// Helpers for message types: unpack with protobuf-c, convert, free; pack a filled C struct.
enum ProtobufC {
    /// Unpacks `bytes` as the message `descriptor` describes and hands the C struct to
    /// `convert`; the unpacked message is freed when `convert` returns. The bytes are first
    /// held to `DecodeBudget.current`. Take `descriptor` from
    /// a message the generated `__init` filled (`message.base.descriptor`): that is the C
    /// global's own address, where `withUnsafePointer(to:)` on the imported global may give a
    /// temporary copy that is gone when the closure returns.
    static func unpack<T>(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ name: String, _ bytes: UnsafeRawBufferPointer,
        _ convert: (UnsafePointer<ProtobufCMessage>) -> T
    ) throws(RPCError) -> T {
        try DecodeBudget.current.check(bytes, descriptor)
        return try UnpackArena.withAllocator { allocator throws(RPCError) in
            guard
                let message = protobuf_c_message_unpack(
                    descriptor, allocator, bytes.count, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
            else {
                let reason = ProtoWireReader.firstProblem(in: bytes) ?? "a field has a value of the wrong type"
                throw RPCError(.invalidArgument, "payload is not a valid \(name): \(reason)")
            }
            defer { protobuf_c_message_free_unpacked(message, allocator) }
            return convert(message)
        }
    }

    /// Packs a filled protobuf-c struct (whose first member is its `ProtobufCMessage` base) onto
    /// the end of `output`, after its length as 4 big-endian bytes when `framed` (a whole frame).
    static func pack<CMessage>(_ message: inout CMessage, onto output: inout [UInt8], framed: Bool = false) {
        withUnsafePointer(to: &message) { pointer in
            pointer.withMemoryRebound(to: ProtobufCMessage.self, capacity: 1) { message in
                let size = protobuf_c_message_get_packed_size(message)
                if framed { withUnsafeBytes(of: UInt32(truncatingIfNeeded: size).bigEndian) { output += $0 } }
                let start = output.count
                output.appendZeros(size)
                output.withUnsafeMutableBufferPointer { _ = protobuf_c_message_pack(message, $0.baseAddress! + start) }
            }
        }
    }
}

/// Owns the C strings, sub-structs and pointer arrays handed to a protobuf-c struct while it is
/// packed, and frees them all at once when it goes away.
///
/// A bump allocator: small requests are carved out of blocks that start at 1 KiB and double up
/// to 64 KiB, so filling a message costs a handful of `malloc` calls however many fields it has;
/// a request of 1 KiB or more (a raw payload) gets a block of its own. Memory is uninitialized
/// and never reused before `deinit`. Use it inside `CArena.scoped` so it stays alive until the
/// pack has finished.
final class CArena {
    private var blocks: [UnsafeMutableRawPointer] = []
    /// The free tail of the current block.
    private var cursor: UnsafeMutableRawPointer?
    private var remaining = 0
    private var nextBlockSize = 1024

    private static let largeRequest = 1024
    private static let largestBlock = 64 * 1024

    /// Calls `body` with a new arena that lives until `body` returns; everything it handed out
    /// is freed then.
    static func scoped<R>(_ body: (CArena) -> R) -> R {
        let arena = CArena()
        return withExtendedLifetime(arena) { body(arena) }
    }

    /// `byteCount` uninitialized bytes aligned to `alignment` (a power of two, at most 16).
    func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
        if let cursor {
            let misalignment = Int(bitPattern: cursor) & (alignment - 1)
            let padding = misalignment == 0 ? 0 : alignment - misalignment
            if padding + byteCount <= remaining {
                self.cursor = cursor + padding + byteCount
                remaining -= padding + byteCount
                return cursor + padding
            }
        }
        if byteCount >= Self.largeRequest {
            // malloc aligns to 16; the current block keeps its free tail.
            let block = malloc(byteCount)!
            blocks.append(block)
            return block
        }
        let size = nextBlockSize
        nextBlockSize = min(nextBlockSize * 2, Self.largestBlock)
        let block = malloc(size)!
        blocks.append(block)
        cursor = block + byteCount
        remaining = size - byteCount
        return block
    }

    /// Uninitialized, correctly aligned memory for `count` values of `type`, freed with the arena.
    /// Only for C types that need no deinitialization.
    func allocate<T>(_ type: T.Type, count: Int = 1) -> UnsafeMutablePointer<T> {
        allocate(byteCount: MemoryLayout<T>.stride * count, alignment: MemoryLayout<T>.alignment)
            .bindMemory(to: type, capacity: count)
    }

    /// A NUL-terminated copy of `text`, freed with the arena.
    func string(_ text: String) -> UnsafeMutablePointer<CChar> {
        var text = text
        return text.withUTF8 { utf8 in
            let copy = allocate(byteCount: utf8.count + 1, alignment: 1)
            if let source = utf8.baseAddress { copy.copyMemory(from: source, byteCount: utf8.count) }
            copy.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return copy.bindMemory(to: CChar.self, capacity: utf8.count + 1)
        }
    }

    deinit { for block in blocks { free(block) } }
}

extension [UInt8] {
    /// Appends `count` zero bytes, to be written over in place: copied from a page of zeros,
    /// which is far faster than appending a repeated element one by one.
    mutating func appendZeros(_ count: Int) {
        var left = count
        while left > 0 {
            let take = Swift.min(left, zeroPage.count)
            append(contentsOf: UnsafeRawBufferPointer(rebasing: zeroPage[0..<take]))
            left -= take
        }
    }
}

/// 4 KiB of zeros, never written.
private nonisolated(unsafe) let zeroPage = UnsafeRawBufferPointer(
    UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 64).initializeMemory(
        as: UInt8.self, repeating: 0))
