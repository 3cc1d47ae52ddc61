internal import CProto

/// `subscriptions.ledger.v1.RecordNotificationResponse`.
public struct RecordNotificationResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.RecordNotificationResponse"

    /// True when the notification id was already in the inbox.
    public var duplicate: Bool
    /// The entry as the inbox holds it.
    public var entry: InboxEntry?

    /// A response; fields default to false and absent.
    public init(duplicate: Bool = false, entry: InboxEntry? = nil) {
        self.duplicate = duplicate
        self.entry = entry
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension RecordNotificationResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__RecordNotificationResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__record_notification_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(duplicate: m.duplicate != 0, entry: ProtoField.message(m.entry, "entry"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.duplicate = duplicate ? 1 : 0
        c.entry = entry?.cMessage(in: arena)
    }
}
