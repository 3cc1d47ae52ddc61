internal import CProto

/// `subscriptions.entitlement.v1.EntitlementEntry`: one capability an account has.
public struct EntitlementEntry: Sendable, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.EntitlementEntry"

    public var capability: String
    /// nil means no end.
    public var untilMilliseconds: Int64?
    /// Every subscription that grants it; at most 100.
    public var grants: [AccessGrant]

    public init(capability: String = "", untilMilliseconds: Int64? = nil, grants: [AccessGrant] = []) {
        self.capability = capability
        self.untilMilliseconds = untilMilliseconds
        self.grants = grants
    }
}

extension EntitlementEntry: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__EntitlementEntry

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__entitlement_entry__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            capability: ProtoField.string(m.capability, "capability"),
            untilMilliseconds: ProtoField.nonZero(m.until_ms),
            grants: ProtoField.messages(m.grants, count: m.n_grants, "grants"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.capability, capability)
        c.until_ms = untilMilliseconds ?? 0
        c.n_grants = grants.count
        c.grants = arena.messages(grants)
    }
}
