internal import CProto

/// `subscriptions.ledger.v1.MarkInboxResponse`, the answer of `MarkInbox` and `ReplayInbox`.
public struct MarkInboxResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.MarkInboxResponse"

    /// The entry after the change.
    public var entry: InboxEntry?

    /// A response carrying `entry`.
    public init(entry: InboxEntry? = nil) { self.entry = entry }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension MarkInboxResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__MarkInboxResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__mark_inbox_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(entry: ProtoField.message(c.pointee.entry, "entry"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.entry = entry?.cMessage(in: arena)
    }
}
