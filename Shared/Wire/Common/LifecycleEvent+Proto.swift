internal import CProto
public import Model

/// `subscriptions.common.v1.LifecycleEvent`. Decoding requires `key`; an unknown event kind is
/// kept as `.unknown(number)`, an unknown state number is `RPCError(.invalidArgument)`.
extension LifecycleEvent: ProtoMessage {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.common.v1.LifecycleEvent"

    /// Decodes an event; throws `RPCError(.invalidArgument)` for malformed bytes, a missing key or
    /// an enum value `Model` cannot hold.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension LifecycleEvent: CMessageConvertible {
    typealias CMessage = Subscriptions__Common__V1__LifecycleEvent

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__common__v1__lifecycle_event__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            position: ProtoField.nonZero(m.position),
            key: ProtoField.requiredMessage(m.key, "key"),
            kind: ProtoField.enumValue(m.kind.rawValue, "kind"),
            storeTimeMilliseconds: ProtoField.nonZero(m.store_time_ms),
            verifiedTimeMilliseconds: ProtoField.nonZero(m.verified_time_ms),
            accountID: ProtoField.optionalString(m.account_id, "account_id"),
            otherAccountID: ProtoField.optionalString(m.other_account_id, "other_account_id"),
            storeType: ProtoField.optionalString(m.store_type, "store_type"),
            storeSubtype: ProtoField.optionalString(m.store_subtype, "store_subtype"),
            notificationID: ProtoField.optionalString(m.notification_id, "notification_id"),
            state: ProtoField.enumValue(m.state.rawValue, "state"),
            rawPayload: ProtoField.optionalString(m.raw_payload, "raw_payload"),
            detail: ProtoField.optionalString(m.detail, "detail"),
            rawTransaction: ProtoField.optionalString(m.raw_transaction, "raw_transaction"),
            rawRenewalInfo: ProtoField.optionalString(m.raw_renewal_info, "raw_renewal_info"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.position = position ?? 0
        c.key = key.cMessage(in: arena)
        c.kind = .init(rawValue: ProtoField.number(kind))
        c.store_time_ms = storeTimeMilliseconds ?? 0
        c.verified_time_ms = verifiedTimeMilliseconds ?? 0
        arena.set(&c.account_id, accountID)
        arena.set(&c.other_account_id, otherAccountID)
        arena.set(&c.store_type, storeType)
        arena.set(&c.store_subtype, storeSubtype)
        arena.set(&c.notification_id, notificationID)
        c.state = .init(rawValue: ProtoField.number(state))
        arena.set(&c.raw_payload, rawPayload)
        arena.set(&c.detail, detail)
        arena.set(&c.raw_transaction, rawTransaction)
        arena.set(&c.raw_renewal_info, rawRenewalInfo)
    }
}
