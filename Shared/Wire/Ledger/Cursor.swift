internal import CProto

/// `subscriptions.ledger.v1.Cursor`: a named position a caller keeps in the ledger.
public struct Cursor: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.ledger.v1.Cursor"

    /// 1..128 bytes.
    public var name: String
    /// 0 for a cursor never advanced.
    public var value: Int64
    public var updatedTimeMilliseconds: Int64?

    public init(name: String = "", value: Int64 = 0, updatedTimeMilliseconds: Int64? = nil) {
        self.name = name
        self.value = value
        self.updatedTimeMilliseconds = updatedTimeMilliseconds
    }

    /// Decodes a cursor; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension Cursor: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__Cursor

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__cursor__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            name: ProtoField.string(m.name, "name"), value: m.value,
            updatedTimeMilliseconds: ProtoField.nonZero(m.updated_ms))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.name, name)
        c.value = value
        c.updated_ms = updatedTimeMilliseconds ?? 0
    }
}
