internal import CProto
public import Model

/// `subscriptions.common.v1.Period`. Unknown offer types and product kinds are kept as
/// `.unknown(number)`.
extension Period: ProtoMessage {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.common.v1.Period"

    /// Decodes a period; throws `RPCError(.invalidArgument)` for malformed bytes.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension Period: CMessageConvertible {
    typealias CMessage = Subscriptions__Common__V1__Period

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__common__v1__period__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            periodID: ProtoField.string(m.period_id, "period_id"),
            productID: ProtoField.string(m.product_id, "product_id"),
            basePlanID: ProtoField.optionalString(m.base_plan_id, "base_plan_id"),
            startMilliseconds: m.start_ms,
            endMilliseconds: ProtoField.nonZero(m.end_ms),
            offerType: ProtoField.enumValue(m.offer_type.rawValue, "offer_type"),
            revokedTimeMilliseconds: ProtoField.nonZero(m.revoked_time_ms),
            revocationReason: ProtoField.optionalString(m.revocation_reason, "revocation_reason"),
            signedTimeMilliseconds: ProtoField.nonZero(m.signed_time_ms),
            productKind: ProtoField.enumValue(m.product_kind.rawValue, "product_kind"),
            raw: ProtoField.optionalString(m.raw, "raw"), stoppedTimeMilliseconds: ProtoField.nonZero(m.stopped_time_ms)
        )
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.period_id, periodID)
        arena.set(&c.product_id, productID)
        arena.set(&c.base_plan_id, basePlanID)
        c.start_ms = startMilliseconds
        c.end_ms = endMilliseconds ?? 0
        c.offer_type = .init(rawValue: ProtoField.number(offerType))
        c.revoked_time_ms = revokedTimeMilliseconds ?? 0
        arena.set(&c.revocation_reason, revocationReason)
        c.signed_time_ms = signedTimeMilliseconds ?? 0
        c.product_kind = .init(rawValue: ProtoField.number(productKind))
        arena.set(&c.raw, raw)
        c.stopped_time_ms = stoppedTimeMilliseconds ?? 0
    }
}
