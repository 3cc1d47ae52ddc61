internal import CProto
public import Model

/// `subscriptions.ledger.v1.GetSubscriptionResponse`.
public struct GetSubscriptionResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.GetSubscriptionResponse"

    /// The recorded state; `nil` when the message carries none.
    public var subscription: Subscription?
    /// Every period the ledger holds for it, as recorded (with the raw signed data), by start.
    public var periods: [Period]

    /// A response carrying `subscription` and its recorded periods.
    public init(subscription: Subscription? = nil, periods: [Period] = []) {
        self.subscription = subscription
        self.periods = periods
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension GetSubscriptionResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetSubscriptionResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_subscription_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(
            subscription: ProtoField.message(c.pointee.subscription, "subscription"),
            periods: ProtoField.messages(c.pointee.periods, count: c.pointee.n_periods, "periods"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.subscription = subscription?.cMessage(in: arena)
        c.n_periods = periods.count
        c.periods = arena.messages(periods)
    }
}
