internal import CProtobufC

/// How much a payload may make protobuf-c build, checked by walking its wire bytes against the
/// message's schema before protobuf-c allocates anything. protobuf-c itself has no bound: it
/// recurses as deep as the bytes nest and allocates a struct for every element, so a 1 MiB
/// frame of empty sub-messages costs tens of megabytes to unpack.
public struct DecodeBudget: Sendable, Equatable {
    /// Fields in the whole message tree, every element of a repeated field counted (a packed
    /// run of scalars counts one per element).
    public var maxFields: Int
    /// Elements of any one repeated field (in one message).
    public var maxRepeated: Int
    /// Fields the schema does not know, in the whole tree.
    public var maxUnknownFields: Int
    /// Levels of nested messages below the top one.
    public var maxDepth: Int

    public init(maxFields: Int = 100_000, maxRepeated: Int = 10_000, maxUnknownFields: Int = 64, maxDepth: Int = 16) {
        self.maxFields = maxFields
        self.maxRepeated = maxRepeated
        self.maxUnknownFields = maxUnknownFields
        self.maxDepth = maxDepth
    }

    /// What every decode is held to unless a method says otherwise.
    public static let standard = DecodeBudget()

    /// The budget decodes on this thread or task are held to (set with `$current.withValue`).
    @TaskLocal public static var current: DecodeBudget = .standard

    /// Throws `RPCError(.resourceExhausted)` naming the first limit `bytes` would pass when
    /// decoded as the message `descriptor` describes.
    func check(_ bytes: UnsafeRawBufferPointer, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>)
        throws(RPCError)
    {
        var walk = Walk(budget: self)
        try walk.message(bytes, descriptor, depth: 0)
    }

    private struct Walk {
        let budget: DecodeBudget
        var fields = 0
        var unknown = 0

        mutating func message(
            _ bytes: UnsafeRawBufferPointer, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, depth: Int
        ) throws(RPCError) {
            // Named only in an error: the walk allocates nothing on the way.
            var name: String { String(cString: descriptor.pointee.name) }
            guard depth <= budget.maxDepth else {
                throw RPCError(
                    .resourceExhausted, "\(name) is nested more than \(budget.maxDepth) messages deep")
            }
            // Elements per repeated field of this message, by field number (few distinct ones).
            var repeated: [(number: UInt32, count: Int)] = []
            // Bytes that are not well-formed end the walk: protobuf-c refuses them with its reason.
            var reader = ProtoWireReader(bytes)
            while let (key, value) = reader.next() {
                guard key <= UInt64(UInt32.max) else { continue }
                let number = UInt32(key)
                guard let field = protobuf_c_message_descriptor_get_field(descriptor, number) else {
                    unknown += 1
                    if unknown > budget.maxUnknownFields {
                        throw RPCError(
                            .resourceExhausted,
                            "\(name): more than \(budget.maxUnknownFields) fields this schema does not know")
                    }
                    continue
                }
                var elements = 1
                let isMessage = field.pointee.type == PROTOBUF_C_TYPE_MESSAGE
                let isRepeated = field.pointee.label == PROTOBUF_C_LABEL_REPEATED
                if isRepeated, let contents = value.contents,
                    let packed = Self.packedCount(contents, field.pointee.type)
                {
                    elements = packed
                }
                fields += elements
                if fields > budget.maxFields {
                    throw RPCError(.resourceExhausted, "\(name): more than \(budget.maxFields) fields in all")
                }
                if isRepeated {
                    let index = repeated.firstIndex { $0.number == number } ?? repeated.endIndex
                    if index == repeated.endIndex { repeated.append((number, 0)) }
                    repeated[index].count += elements
                    if repeated[index].count > budget.maxRepeated {
                        let fieldName = String(cString: field.pointee.name)
                        throw RPCError(
                            .resourceExhausted,
                            "\(name).\(fieldName): more than \(budget.maxRepeated) elements")
                    }
                }
                if isMessage, let contents = value.contents, let sub = field.pointee.descriptor {
                    try message(
                        contents, sub.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), depth: depth + 1)
                }
            }
        }

        /// The elements of a packed run of scalars of `type` (at most one per varint end, or per
        /// fixed width); nil for a type that is not packed (strings, bytes, messages).
        private static func packedCount(_ bytes: UnsafeRawBufferPointer, _ type: ProtobufCType) -> Int? {
            switch type {
            case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES, PROTOBUF_C_TYPE_MESSAGE: return nil
            case PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_DOUBLE:
                return max(1, bytes.count / 8)
            case PROTOBUF_C_TYPE_FIXED32, PROTOBUF_C_TYPE_SFIXED32, PROTOBUF_C_TYPE_FLOAT:
                return max(1, bytes.count / 4)
            default: return max(1, bytes.reduce(0) { $0 + ($1 & 0x80 == 0 ? 1 : 0) })
            }
        }
    }
}
