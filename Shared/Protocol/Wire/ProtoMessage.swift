internal import CProtobufC
import Glibc

/// A Swift value type for one protobuf message of `proto/`, converted to and from the
/// protobuf-c struct at the boundary.
public protocol ProtoMessage: Sendable {
    /// The fully qualified protobuf name, e.g. `subscriptions.common.v1.HealthRequest`.
    static var protoName: String { get }
    /// Decodes serialized bytes; throws `RPCError(.invalidArgument)` naming what is wrong.
    init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError)
    /// Appends the serialized form to `output` (a reply buffer, say).
    func serialize(appendingTo output: inout [UInt8])
    /// The message as a caller with the read-only role (`RPC_READ_ONLY`) sees it: the fields the
    /// .proto marks `@redact store-id` cut to their last 4 characters, those marked
    /// `@redact payload` cleared, in this message and every message it holds. Generated for the
    /// messages that hold such a field; the others are shown as they are.
    func redacted() -> Self
}

extension ProtoMessage {
    /// Nothing to redact: the message as it is.
    public func redacted() -> Self { self }

    /// The serialized form.
    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        serialize(appendingTo: &bytes)
        return bytes
    }

    /// Decodes from an array.
    public init(serialized bytes: [UInt8]) throws(RPCError) {
        self = try bytes.span.bytes.withUnsafeBytes { (raw) throws(RPCError) in try Self(serialized: raw) }
    }
}

extension Collection where Element: ProtoMessage {
    /// How many of the first elements, at most `count`, go in one message of at most about
    /// `bytes` (their serialized sizes, each with a field's tag and length): a batch that fits
    /// in a frame. At least one when there is one, whatever its size.
    public func batchCount(upTo count: Int, bytes: Int) -> Int {
        var taken = 0
        var total = 0
        var buffer: [UInt8] = []
        for element in self.prefix(count) {
            buffer.removeAll(keepingCapacity: true)
            element.serialize(appendingTo: &buffer)
            total += buffer.count + 6
            if taken > 0 && total > bytes { break }
            taken += 1
        }
        return taken
    }
}

/// Helpers for message types: unpack with protobuf-c, convert, free; pack a filled C struct
/// (`package`: a service's hot path packs its own answer).
package enum ProtobufC {
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
        withUnsafePointer(to: &message) { pack(message: UnsafeRawPointer($0), onto: &output, framed: framed) }
    }

    /// `pack` for the filled struct at `message`: not generic, so that another module's hot
    /// path calls it without looking up the struct's type at run time.
    package static func pack(message: UnsafeRawPointer, onto output: inout [UInt8], framed: Bool = false) {
        // The struct begins with its `ProtobufCMessage` base; protobuf-c reads it through that.
        let message = UnsafePointer<ProtobufCMessage>(OpaquePointer(message))
        let size = protobuf_c_message_get_packed_size(message)
        if output.isEmpty { output.reserveCapacity(size + 4) }
        if framed { withUnsafeBytes(of: UInt32(truncatingIfNeeded: size).bigEndian) { output += $0 } }
        let start = output.count
        output.appendZeros(size)
        output.withUnsafeMutableBufferPointer { _ = protobuf_c_message_pack(message, $0.baseAddress! + start) }
    }
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
