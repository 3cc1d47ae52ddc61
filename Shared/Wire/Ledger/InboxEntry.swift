internal import CProto
public import Model

/// `subscriptions.ledger.v1.InboxEntry`: one store notification in the ledger's inbox work queue.
///
/// Absent values are `nil`: times (epoch milliseconds, the wire's 0), optional strings (the
/// wire's empty string), enums (`…_UNSPECIFIED`) and `key` (no sub-message). A store or
/// environment number this version does not know is `RPCError(.invalidArgument)`; an unknown
/// status is kept as `.unknown(number)`.
public struct InboxEntry: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.InboxEntry"

    /// The store that sent it.
    public var store: Store?
    /// The environment it came from.
    public var environment: StoreEnvironment?
    /// Apple `notificationUUID` or Pub/Sub `messageId`.
    public var notificationID: String
    /// The store's notification type, verbatim.
    public var notificationType: String
    /// The store's notification subtype, verbatim.
    public var subtype: String?
    /// The store's signing or publish time.
    public var signedTimeMilliseconds: Int64?
    /// When this backend received it.
    public var receivedTimeMilliseconds: Int64?
    /// Where the entry stands in the work queue.
    public var status: InboxStatus?
    /// How many times processing was attempted.
    public var attempts: UInt32
    /// Why the last attempt failed.
    public var lastError: String?
    /// The subscription the notification is about, when known.
    public var key: SubscriptionKey?
    /// The raw signed payload; at most 64 KiB.
    public var rawPayload: String

    /// An entry; every field defaults to absent, zero or empty.
    public init(
        store: Store? = nil, environment: StoreEnvironment? = nil, notificationID: String = "",
        notificationType: String = "", subtype: String? = nil, signedTimeMilliseconds: Int64? = nil,
        receivedTimeMilliseconds: Int64? = nil, status: InboxStatus? = nil, attempts: UInt32 = 0,
        lastError: String? = nil, key: SubscriptionKey? = nil, rawPayload: String = ""
    ) {
        self.store = store
        self.environment = environment
        self.notificationID = notificationID
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedTimeMilliseconds = signedTimeMilliseconds
        self.receivedTimeMilliseconds = receivedTimeMilliseconds
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.key = key
        self.rawPayload = rawPayload
    }

    /// Decodes an entry; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension InboxEntry: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__InboxEntry

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__inbox_entry__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            store: ProtoField.enumValue(m.store.rawValue, "store"),
            environment: ProtoField.enumValue(m.environment.rawValue, "environment"),
            notificationID: ProtoField.string(m.notification_id, "notification_id"),
            notificationType: ProtoField.string(m.notification_type, "notification_type"),
            subtype: ProtoField.optionalString(m.subtype, "subtype"),
            signedTimeMilliseconds: ProtoField.nonZero(m.signed_time_ms),
            receivedTimeMilliseconds: ProtoField.nonZero(m.received_time_ms),
            status: ProtoField.enumValue(m.status.rawValue, "status"),
            attempts: m.attempts,
            lastError: ProtoField.optionalString(m.last_error, "last_error"),
            key: ProtoField.message(m.key, "key"),
            rawPayload: ProtoField.string(m.raw_payload, "raw_payload"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.store = .init(rawValue: ProtoField.number(store))
        c.environment = .init(rawValue: ProtoField.number(environment))
        arena.set(&c.notification_id, notificationID)
        arena.set(&c.notification_type, notificationType)
        arena.set(&c.subtype, subtype)
        c.signed_time_ms = signedTimeMilliseconds ?? 0
        c.received_time_ms = receivedTimeMilliseconds ?? 0
        c.status = .init(rawValue: ProtoField.number(status))
        c.attempts = attempts
        arena.set(&c.last_error, lastError)
        c.key = key?.cMessage(in: arena)
        arena.set(&c.raw_payload, rawPayload)
    }
}
