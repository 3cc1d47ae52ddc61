internal import CProto
public import Model

/// `subscriptions.ledger.v1.RecordVerifiedStateRequest`: records a verified subscription state
/// and its events, idempotently by key.
public struct RecordVerifiedStateRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.RecordVerifiedStateRequest"

    /// 1...128 bytes. The same key with different content is FAILED_PRECONDITION.
    public var idempotencyKey: String
    /// The verified state; `nil` when the message carries none.
    public var subscription: Subscription?
    /// At most 16 events.
    public var events: [LifecycleEvent]
    /// The inbox entry this state resolves, when it came from a notification.
    public var notificationID: String?
    /// The periods this state's evidence proves; at most 256.
    public var periods: [Period]
    /// The state is what one signed notification alone proves (the store's API did not answer):
    /// its periods are recorded, the state only when the ledger holds none for the subscription.
    public var partial: Bool

    /// A request; fields default to empty and absent.
    public init(
        idempotencyKey: String = "", subscription: Subscription? = nil, events: [LifecycleEvent] = [],
        notificationID: String? = nil, periods: [Period] = [], partial: Bool = false
    ) {
        self.idempotencyKey = idempotencyKey
        self.subscription = subscription
        self.events = events
        self.notificationID = notificationID
        self.periods = periods
        self.partial = partial
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension RecordVerifiedStateRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__RecordVerifiedStateRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__record_verified_state_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            idempotencyKey: ProtoField.string(m.idempotency_key, "idempotency_key"),
            subscription: ProtoField.message(m.subscription, "subscription"),
            events: ProtoField.messages(m.events, count: m.n_events, "events"),
            notificationID: ProtoField.optionalString(m.notification_id, "notification_id"),
            periods: ProtoField.messages(m.periods, count: m.n_periods, "periods"),
            partial: m.partial != 0)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.idempotency_key, idempotencyKey)
        c.subscription = subscription?.cMessage(in: arena)
        c.n_events = events.count
        c.events = arena.messages(events)
        arena.set(&c.notification_id, notificationID)
        c.n_periods = periods.count
        c.periods = arena.messages(periods)
        c.partial = partial ? 1 : 0
    }
}
