internal import CProto
public import Model

/// `subscriptions.ledger.v1.RecordVerifiedStateResponse`.
public struct RecordVerifiedStateResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.RecordVerifiedStateResponse"

    /// The current state after the call (unchanged when the recorded state was older).
    public var subscription: Subscription?
    /// False when the state was older than the newest applied and went to history only.
    public var applied: Bool
    /// True when the idempotency key was seen before and this is the first answer again.
    public var replayed: Bool
    /// The change-feed position of the commit.
    public var position: UInt64

    /// A response; fields default to absent, false and 0.
    public init(subscription: Subscription? = nil, applied: Bool = false, replayed: Bool = false, position: UInt64 = 0)
    {
        self.subscription = subscription
        self.applied = applied
        self.replayed = replayed
        self.position = position
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension RecordVerifiedStateResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__RecordVerifiedStateResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__record_verified_state_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            subscription: ProtoField.message(m.subscription, "subscription"), applied: m.applied != 0,
            replayed: m.replayed != 0, position: m.position)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.subscription = subscription?.cMessage(in: arena)
        c.applied = applied ? 1 : 0
        c.replayed = replayed ? 1 : 0
        c.position = position
    }
}
