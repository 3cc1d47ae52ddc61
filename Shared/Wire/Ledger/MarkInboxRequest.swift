internal import CProto
public import Model

/// `subscriptions.ledger.v1.MarkInboxRequest`: marks an inbox entry processed or failed.
public struct MarkInboxRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.MarkInboxRequest"

    /// The store of the entry.
    public var store: Store?
    /// The entry: Apple `notificationUUID` or Pub/Sub `messageId`.
    public var notificationID: String
    /// `.processed` or `.failed`.
    public var status: InboxStatus?
    /// The reason, for `.failed`; at most 4 KiB.
    public var error: String?

    /// A request; fields default to absent and empty.
    public init(store: Store? = nil, notificationID: String = "", status: InboxStatus? = nil, error: String? = nil) {
        self.store = store
        self.notificationID = notificationID
        self.status = status
        self.error = error
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension MarkInboxRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__MarkInboxRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__mark_inbox_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            store: ProtoField.enumValue(m.store.rawValue, "store"),
            notificationID: ProtoField.string(m.notification_id, "notification_id"),
            status: ProtoField.enumValue(m.status.rawValue, "status"),
            error: ProtoField.optionalString(m.error, "error"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.store = .init(rawValue: ProtoField.number(store))
        arena.set(&c.notification_id, notificationID)
        c.status = .init(rawValue: ProtoField.number(status))
        arena.set(&c.error, error)
    }
}
