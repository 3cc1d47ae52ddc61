internal import CProto

/// `subscriptions.entitlement.v1.CheckAccessResponse`.
public struct CheckAccessResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.CheckAccessResponse"

    public var allowed: Bool
    /// Access lasts until this instant unless something changes; nil (with `allowed`) means no end.
    public var untilMilliseconds: Int64?
    public var reason: AccessReason?
    public var grant: AccessGrant?
    public var detail: String?

    public init(
        allowed: Bool = false, untilMilliseconds: Int64? = nil, reason: AccessReason? = nil, grant: AccessGrant? = nil,
        detail: String? = nil
    ) {
        self.allowed = allowed
        self.untilMilliseconds = untilMilliseconds
        self.reason = reason
        self.grant = grant
        self.detail = detail
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension CheckAccessResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__CheckAccessResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__check_access_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            allowed: m.allowed != 0, untilMilliseconds: ProtoField.nonZero(m.until_ms),
            reason: ProtoField.enumValue(m.reason.rawValue, "reason"), grant: ProtoField.message(m.grant, "grant"),
            detail: ProtoField.optionalString(m.detail, "detail"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.allowed = allowed ? 1 : 0
        c.until_ms = untilMilliseconds ?? 0
        c.reason = .init(rawValue: ProtoField.number(reason))
        c.grant = grant?.cMessage(in: arena)
        arena.set(&c.detail, detail)
    }
}
