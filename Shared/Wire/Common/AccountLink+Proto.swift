internal import CProto
public import Model

/// `subscriptions.common.v1.AccountLink`. Decoding requires `key`.
extension AccountLink: ProtoMessage {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.common.v1.AccountLink"

    /// Decodes a link; throws `RPCError(.invalidArgument)` for malformed bytes or a missing or
    /// invalid key.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension AccountLink: CMessageConvertible {
    typealias CMessage = Subscriptions__Common__V1__AccountLink

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__common__v1__account_link__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            accountID: ProtoField.string(m.account_id, "account_id"),
            key: ProtoField.requiredMessage(m.key, "key"),
            storeAccountRef: ProtoField.optionalString(m.store_account_ref, "store_account_ref"),
            linkedTimeMilliseconds: ProtoField.nonZero(m.linked_time_ms))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
        c.key = key.cMessage(in: arena)
        arena.set(&c.store_account_ref, storeAccountRef)
        c.linked_time_ms = linkedTimeMilliseconds ?? 0
    }
}
