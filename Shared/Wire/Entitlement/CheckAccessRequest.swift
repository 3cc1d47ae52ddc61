internal import CProto

/// `subscriptions.entitlement.v1.CheckAccessRequest`.
public struct CheckAccessRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.CheckAccessRequest"

    public var accountID: String
    public var capability: String
    /// The instant to answer for; nil means now.
    public var atMilliseconds: Int64?

    public init(accountID: String = "", capability: String = "", atMilliseconds: Int64? = nil) {
        self.accountID = accountID
        self.capability = capability
        self.atMilliseconds = atMilliseconds
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension CheckAccessRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__CheckAccessRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__check_access_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            accountID: ProtoField.string(m.account_id, "account_id"),
            capability: ProtoField.string(m.capability, "capability"),
            atMilliseconds: ProtoField.nonZero(m.at_ms))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
        arena.set(&c.capability, capability)
        c.at_ms = atMilliseconds ?? 0
    }
}
