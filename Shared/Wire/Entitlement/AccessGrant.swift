internal import CProto
public import Model

/// `subscriptions.entitlement.v1.Grant`: what a grant, or the nearest miss, rests on.
public struct AccessGrant: Sendable, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.Grant"

    public var key: SubscriptionKey?
    public var productID: String
    public var basePlanID: String?
    public var state: SubscriptionState?
    /// The end of access this subscription gives; nil means until revoked.
    public var untilMilliseconds: Int64?
    /// The subscription's renewal details (`ListEntitlements` only).
    public var renewal: GrantRenewal?

    public init(
        key: SubscriptionKey? = nil, productID: String = "", basePlanID: String? = nil, state: SubscriptionState? = nil,
        untilMilliseconds: Int64? = nil, renewal: GrantRenewal? = nil
    ) {
        self.key = key
        self.productID = productID
        self.basePlanID = basePlanID
        self.state = state
        self.untilMilliseconds = untilMilliseconds
        self.renewal = renewal
    }
}

extension AccessGrant: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__Grant

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__grant__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            key: ProtoField.message(m.key, "key"), productID: ProtoField.string(m.product_id, "product_id"),
            basePlanID: ProtoField.optionalString(m.base_plan_id, "base_plan_id"),
            state: ProtoField.enumValue(m.state.rawValue, "state"), untilMilliseconds: ProtoField.nonZero(m.until_ms),
            renewal: ProtoField.message(m.renewal, "renewal"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.key = key?.cMessage(in: arena)
        arena.set(&c.product_id, productID)
        arena.set(&c.base_plan_id, basePlanID)
        c.state = .init(rawValue: ProtoField.number(state))
        c.until_ms = untilMilliseconds ?? 0
        c.renewal = renewal?.cMessage(in: arena)
    }
}
