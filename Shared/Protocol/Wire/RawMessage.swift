/// A message whose bytes are passed through as they are: for a caller that learns a method's
/// types at run time (an operator's `subctl call`), which reads and checks them itself.
public struct RawMessage: ProtoMessage, Equatable {
    public static let protoName = "(bytes)"

    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self.bytes = [UInt8](bytes) }

    public func serialize(appendingTo output: inout [UInt8]) { output.append(contentsOf: bytes) }
}
