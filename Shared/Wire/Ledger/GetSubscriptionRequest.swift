internal import CProto
public import Model

/// `subscriptions.ledger.v1.GetSubscriptionRequest`.
public struct GetSubscriptionRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.GetSubscriptionRequest"

    /// The subscription to read; `nil` when the message carries none.
    public var key: SubscriptionKey?
    /// The state only, without the recorded periods and their raw data.
    public var stateOnly: Bool

    /// A request for `key`.
    public init(key: SubscriptionKey? = nil, stateOnly: Bool = false) {
        self.key = key
        self.stateOnly = stateOnly
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension GetSubscriptionRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetSubscriptionRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_subscription_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(key: ProtoField.message(c.pointee.key, "key"), stateOnly: c.pointee.state_only != 0)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.key = key?.cMessage(in: arena)
        c.state_only = stateOnly ? 1 : 0
    }
}
