internal import CProto
public import Model

/// `subscriptions.common.v1.SubscriptionKey`. Decoding requires a store and an environment this
/// version knows: a key whose store is unspecified or unknown identifies nothing any service
/// here can look up, so it is `RPCError(.invalidArgument)` naming the field.
extension SubscriptionKey: ProtoMessage {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.common.v1.SubscriptionKey"

    /// Decodes a key; throws `RPCError(.invalidArgument)` for malformed bytes or an unspecified or
    /// unknown store or environment.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension SubscriptionKey: CMessageConvertible {
    typealias CMessage = Subscriptions__Common__V1__SubscriptionKey

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__common__v1__subscription_key__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            store: ProtoField.requiredEnum(m.store.rawValue, "store"),
            environment: ProtoField.requiredEnum(m.environment.rawValue, "environment"),
            storeID: ProtoField.string(m.store_id, "store_id"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.store = .init(rawValue: ProtoField.number(store))
        c.environment = .init(rawValue: ProtoField.number(environment))
        arena.set(&c.store_id, storeID)
    }
}
