internal import CProto
public import Model

/// `subscriptions.ledger.v1.ReplayInboxRequest`: processes an inbox entry again.
public struct ReplayInboxRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.ReplayInboxRequest"

    /// The store of the entry.
    public var store: Store?
    /// The entry: Apple `notificationUUID` or Pub/Sub `messageId`.
    public var notificationID: String

    /// A request; fields default to absent and empty.
    public init(store: Store? = nil, notificationID: String = "") {
        self.store = store
        self.notificationID = notificationID
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension ReplayInboxRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__ReplayInboxRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__replay_inbox_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            store: ProtoField.enumValue(m.store.rawValue, "store"),
            notificationID: ProtoField.string(m.notification_id, "notification_id"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.store = .init(rawValue: ProtoField.number(store))
        arena.set(&c.notification_id, notificationID)
    }
}
