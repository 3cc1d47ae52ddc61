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
        var result: Result<Self, RPCError> = .failure(RPCError(.internalError, "unreachable"))
        bytes.withUnsafeBytes { raw in
            result = Result { () throws(RPCError) -> Self in try Self(serialized: raw) }
        }
        self = try result.get()
    }
}

/// Helpers for message types: unpack with protobuf-c, convert, free; pack a filled C struct.
enum ProtobufC {
    /// Unpacks `bytes` as the message `descriptor` describes and hands the C struct to
    /// `convert`; the unpacked message is freed when `convert` returns. Take `descriptor` from
    /// a message the generated `__init` filled (`message.base.descriptor`): that is the C
    /// global's own address, where `withUnsafePointer(to:)` on the imported global may give a
    /// temporary copy that is gone when the closure returns.
    static func unpack<T>(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ name: String, _ bytes: UnsafeRawBufferPointer,
        _ convert: (UnsafePointer<ProtobufCMessage>) -> T
    ) throws(RPCError) -> T {
        guard
            let message = protobuf_c_message_unpack(
                descriptor, nil, bytes.count, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        else {
            let reason = ProtoWireScanner.firstProblem(in: bytes) ?? "a field has a value of the wrong type"
            throw RPCError(.invalidArgument, "payload is not a valid \(name): \(reason)")
        }
        defer { protobuf_c_message_free_unpacked(message, nil) }
        return convert(message)
    }

    /// Packs a filled C message into a new array.
    static func pack(_ message: UnsafePointer<ProtobufCMessage>) -> [UInt8] {
        let size = protobuf_c_message_get_packed_size(message)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = protobuf_c_message_pack(message, buffer.baseAddress!)
        }
    }
}

/// Owns C strings and byte copies handed to a protobuf-c struct while it is packed.
final class CArena {
    private var allocations: [UnsafeMutableRawPointer] = []

    /// A NUL-terminated copy of `text`, freed with the arena.
    func string(_ text: String) -> UnsafeMutablePointer<CChar> {
        let copy = strdup(text)!
        allocations.append(UnsafeMutableRawPointer(copy))
        return copy
    }

    deinit { for pointer in allocations { free(pointer) } }
}
