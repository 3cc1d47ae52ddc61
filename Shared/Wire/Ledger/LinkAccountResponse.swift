internal import CProto
public import Model

/// `subscriptions.ledger.v1.LinkAccountResponse`.
public struct LinkAccountResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.LinkAccountResponse"

    /// What the call did; `nil` for unspecified.
    public var outcome: LinkOutcome?
    /// The account that held the subscription before, when another one did.
    public var previousAccountID: String?
    /// The subscription after the call.
    public var subscription: Subscription?
    /// The change-feed position of the commit.
    public var position: UInt64

    /// A response; fields default to absent and 0.
    public init(
        outcome: LinkOutcome? = nil, previousAccountID: String? = nil, subscription: Subscription? = nil,
        position: UInt64 = 0
    ) {
        self.outcome = outcome
        self.previousAccountID = previousAccountID
        self.subscription = subscription
        self.position = position
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension LinkAccountResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__LinkAccountResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__link_account_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            outcome: ProtoField.enumValue(m.outcome.rawValue, "outcome"),
            previousAccountID: ProtoField.optionalString(m.previous_account_id, "previous_account_id"),
            subscription: ProtoField.message(m.subscription, "subscription"),
            position: m.position)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.outcome = .init(rawValue: ProtoField.number(outcome))
        arena.set(&c.previous_account_id, previousAccountID)
        c.subscription = subscription?.cMessage(in: arena)
        c.position = position
    }
}
