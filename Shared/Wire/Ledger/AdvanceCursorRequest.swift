internal import CProto

/// `subscriptions.ledger.v1.AdvanceCursorRequest`.
public struct AdvanceCursorRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.ledger.v1.AdvanceCursorRequest"

    public var name: String
    public var value: Int64

    public init(name: String = "", value: Int64 = 0) {
        self.name = name
        self.value = value
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension AdvanceCursorRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__AdvanceCursorRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__advance_cursor_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(name: ProtoField.string(m.name, "name"), value: m.value)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.name, name)
        c.value = value
    }
}
