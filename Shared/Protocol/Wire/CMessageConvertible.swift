internal import CProtobufC

/// A Swift value that converts to and from one protobuf-c message struct. The conversions are
/// internal: values cross the module boundary only as Swift types or serialized bytes.
protocol CMessageConvertible {
    /// The generated struct, e.g. `Subscriptions__Common__V1__Subscription`.
    associatedtype CMessage
    /// The fully qualified protobuf name, used in error messages.
    static var protoName: String { get }
    /// Writes the generated defaults into `message` with the generated `__init`, which also sets
    /// `base.descriptor` to the address of the generated descriptor.
    static func initialize(_ message: UnsafeMutablePointer<CMessage>)
    /// Copies every field out of an unpacked (or filled) struct; throws when a field holds a value
    /// this type cannot represent.
    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError)
    /// Sets every field of `c`, which holds the generated defaults, that differs from its default.
    /// Strings, sub-messages and arrays are allocated in `arena` and stay valid as long as it does.
    func fill(_ c: inout CMessage, in arena: CArena)
}

extension CMessageConvertible {
    /// A filled copy allocated in `arena`, for a sub-message or an element of a repeated field.
    func cMessage(in arena: CArena) -> UnsafeMutablePointer<CMessage> {
        let message = arena.allocate(CMessage.self)
        Self.initialize(message)
        fill(&message.pointee, in: arena)
        return message
    }

    /// Appends the serialized form to `output`: fills the struct in a scoped arena and packs it.
    func pack(appendingTo output: inout [UInt8]) {
        CArena.scoped { arena in ProtobufC.pack(&cMessage(in: arena).pointee, onto: &output) }
    }

    /// Decodes serialized bytes. Throws `RPCError(.invalidArgument)` naming `protoName` when
    /// protobuf-c refuses the bytes or a field holds a value this type cannot represent.
    static func unpacked(_ bytes: UnsafeRawBufferPointer) throws(RPCError) -> Self {
        // The descriptor comes from a struct the generated __init filled, so it is the address of
        // the generated global itself (the first word of `base`), never a temporary copy.
        let descriptor = withUnsafeTemporaryAllocation(of: CMessage.self, capacity: 1) { buffer in
            initialize(buffer.baseAddress!)
            return UnsafeRawPointer(buffer.baseAddress!).load(as: UnsafePointer<ProtobufCMessageDescriptor>.self)
        }
        let result = try ProtobufC.unpack(descriptor, protoName, bytes) { message in
            Result { () throws(ProtoFieldError) -> Self in
                try Self(UnsafeRawPointer(message).assumingMemoryBound(to: CMessage.self))
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw RPCError(.invalidArgument, "payload is not a valid \(protoName): \(error)")
        }
    }
}

extension CArena {
    /// A C array of pointers to filled copies of `values` (the layout protobuf-c uses for a
    /// repeated message field), or nil when `values` is empty. Two allocations: the structs
    /// side by side, then the pointers.
    func messages<T: CMessageConvertible>(_ values: [T]) -> UnsafeMutablePointer<UnsafeMutablePointer<T.CMessage>?>? {
        guard !values.isEmpty else { return nil }
        let structs = allocate(T.CMessage.self, count: values.count)
        let pointers = allocate(UnsafeMutablePointer<T.CMessage>?.self, count: values.count)
        for (index, value) in values.enumerated() {
            let element = structs + index
            T.initialize(element)
            value.fill(&element.pointee, in: self)
            (pointers + index).initialize(to: element)
        }
        return pointers
    }

    /// A C array of copies of `values` (a repeated string field), or nil when empty.
    func strings(_ values: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        guard !values.isEmpty else { return nil }
        let pointers = allocate(UnsafeMutablePointer<CChar>?.self, count: values.count)
        for (index, value) in values.enumerated() { (pointers + index).initialize(to: string(value)) }
        return pointers
    }

    /// Points `field` at a copy of `text`; leaves the generated default (protobuf-c's shared
    /// empty string) when `text` is nil or empty. protobuf-c holds strings as C strings, so a
    /// string with an embedded NUL is sent cut at the NUL.
    func set(_ field: inout UnsafeMutablePointer<CChar>!, _ text: String?) {
        guard let text, !text.isEmpty else { return }
        field = string(text)
    }
}
