internal import CProto
public import Model

/// `subscriptions.verifier.v1.VerifyPurchaseResponse`: the verified, recorded purchase.
public struct VerifyPurchaseResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.verifier.v1.VerifyPurchaseResponse"

    public var subscription: Subscription?
    /// True when this call linked the purchase to the account (false when it already was).
    public var newlyLinked: Bool
    /// The account the purchase was linked to before, when the transfer policy moved it.
    public var previousAccountID: String?

    public init(subscription: Subscription? = nil, newlyLinked: Bool = false, previousAccountID: String? = nil) {
        self.subscription = subscription
        self.newlyLinked = newlyLinked
        self.previousAccountID = previousAccountID
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension VerifyPurchaseResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__VerifyPurchaseResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__verify_purchase_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            subscription: ProtoField.message(m.subscription, "subscription"), newlyLinked: m.newly_linked != 0,
            previousAccountID: ProtoField.optionalString(m.previous_account_id, "previous_account_id"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.subscription = subscription?.cMessage(in: arena)
        c.newly_linked = newlyLinked ? 1 : 0
        arena.set(&c.previous_account_id, previousAccountID)
    }
}
