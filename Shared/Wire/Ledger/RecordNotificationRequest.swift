internal import CProto

/// `subscriptions.ledger.v1.RecordNotificationRequest`: puts a store notification in the inbox.
public struct RecordNotificationRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.RecordNotificationRequest"

    /// The notification; `nil` when the message carries none.
    public var entry: InboxEntry?

    /// A request recording `entry`.
    public init(entry: InboxEntry? = nil) { self.entry = entry }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension RecordNotificationRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__RecordNotificationRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__record_notification_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(entry: ProtoField.message(c.pointee.entry, "entry"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.entry = entry?.cMessage(in: arena)
    }
}
