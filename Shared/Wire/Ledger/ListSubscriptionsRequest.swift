internal import CProto
public import Model

/// `subscriptions.ledger.v1.ListSubscriptionsRequest`: one store's subscriptions by state and
/// expiry window, for reconciliation.
public struct ListSubscriptionsRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.ledger.v1.ListSubscriptionsRequest"

    public var store: Store?
    /// `nil` means any state.
    public var state: SubscriptionState?
    /// Only subscriptions whose paid period ends at or after this time, when set…
    public var expiresAfterMilliseconds: Int64?
    /// …and before this time, when set.
    public var expiresBeforeMilliseconds: Int64?
    /// 1..500; 0 means 100.
    public var pageSize: UInt32
    public var pageToken: String?

    public init(
        store: Store? = nil, state: SubscriptionState? = nil, expiresAfterMilliseconds: Int64? = nil,
        expiresBeforeMilliseconds: Int64? = nil, pageSize: UInt32 = 0, pageToken: String? = nil
    ) {
        self.store = store
        self.state = state
        self.expiresAfterMilliseconds = expiresAfterMilliseconds
        self.expiresBeforeMilliseconds = expiresBeforeMilliseconds
        self.pageSize = pageSize
        self.pageToken = pageToken
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension ListSubscriptionsRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__ListSubscriptionsRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__list_subscriptions_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            store: ProtoField.enumValue(m.store.rawValue, "store"),
            state: ProtoField.enumValue(m.state.rawValue, "state"),
            expiresAfterMilliseconds: ProtoField.nonZero(m.expires_after_ms),
            expiresBeforeMilliseconds: ProtoField.nonZero(m.expires_before_ms), pageSize: m.page_size,
            pageToken: ProtoField.optionalString(m.page_token, "page_token"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.store = .init(rawValue: ProtoField.number(store))
        c.state = .init(rawValue: ProtoField.number(state))
        c.expires_after_ms = expiresAfterMilliseconds ?? 0
        c.expires_before_ms = expiresBeforeMilliseconds ?? 0
        c.page_size = pageSize
        arena.set(&c.page_token, pageToken)
    }
}
