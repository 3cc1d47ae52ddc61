internal import CProto
public import Model

/// `subscriptions.verifier.v1.RefreshSubscriptionRequest`: fetch one subscription from its store.
public struct RefreshSubscriptionRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.verifier.v1.RefreshSubscriptionRequest"

    public var key: SubscriptionKey?

    public init(key: SubscriptionKey? = nil) { self.key = key }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension RefreshSubscriptionRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__RefreshSubscriptionRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__refresh_subscription_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(key: ProtoField.message(c.pointee.key, "key"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) { c.key = key?.cMessage(in: arena) }
}
