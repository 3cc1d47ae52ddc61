internal import CProto

/// `subscriptions.ledger.v1.GetCursorRequest`.
public struct GetCursorRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.ledger.v1.GetCursorRequest"

    public var name: String

    public init(name: String = "") { self.name = name }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension GetCursorRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetCursorRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_cursor_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(name: ProtoField.string(c.pointee.name, "name"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) { arena.set(&c.name, name) }
}
