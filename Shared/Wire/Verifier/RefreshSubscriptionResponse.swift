internal import CProto
public import Model

/// `subscriptions.verifier.v1.RefreshSubscriptionResponse`: the subscription as recorded after
/// asking its store.
public struct RefreshSubscriptionResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.verifier.v1.RefreshSubscriptionResponse"

    public var subscription: Subscription?
    /// True when the store's answer changed the recorded state.
    public var changed: Bool

    public init(subscription: Subscription? = nil, changed: Bool = false) {
        self.subscription = subscription
        self.changed = changed
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension RefreshSubscriptionResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__RefreshSubscriptionResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__refresh_subscription_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(subscription: ProtoField.message(m.subscription, "subscription"), changed: m.changed != 0)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.subscription = subscription?.cMessage(in: arena)
        c.changed = changed ? 1 : 0
    }
}
