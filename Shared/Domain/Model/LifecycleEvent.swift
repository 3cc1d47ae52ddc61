/// One normalized entry of a subscription's audit trail. Mirrors
/// `subscriptions.common.v1.LifecycleEvent` field by field.
///
/// Absent values are `nil`, as in `Subscription`: times (epoch milliseconds, the wire's 0),
/// optional strings (the wire's empty string) and enums (the proto's `…_UNSPECIFIED`).
public struct LifecycleEvent: Sendable, Hashable {
    /// The change-feed position of the commit that recorded it; `nil` until the ledger records it.
    public var position: UInt64?
    /// The subscription it happened to.
    public var key: SubscriptionKey
    /// What happened; `nil` for unspecified.
    public var kind: EventKind?
    /// The store's own signed or event time.
    public var storeTimeMilliseconds: Int64?
    /// When this backend verified it.
    public var verifiedTimeMilliseconds: Int64?
    /// The account the event concerns.
    public var accountID: String?
    /// For links and transfers: the other account involved.
    public var otherAccountID: String?
    /// The store's own notification type, verbatim (also types this version does not know).
    public var storeType: String?
    /// The store's own notification subtype, verbatim.
    public var storeSubtype: String?
    /// Apple `notificationUUID` or Pub/Sub `messageId`, when a notification carried it.
    public var notificationID: String?
    /// The subscription's state after the event.
    public var state: SubscriptionState?
    /// The raw signed payload (JWS or JSON) for audit; at most 64 KiB.
    public var rawPayload: String?
    /// Free text for operators.
    public var detail: String?
    /// The store's answer the state rests on (Apple `signedTransactionInfo`), for audit.
    public var rawTransaction: String?
    /// Apple `signedRenewalInfo`, when there is one, for audit.
    public var rawRenewalInfo: String?
    /// Who asked for it (a grant, a merge, a deletion): the caller's identity or address.
    public var actor: String?
    /// The reason the caller gave for an operation (a grant, an import, an action at a store).
    public var reason: String?
    /// The trace id (W3C Trace Context, 32 hex digits) of the call that recorded it; set by the
    /// ledger.
    public var traceID: String?

    /// An event; every field but `key` and `kind` defaults to absent.
    public init(
        position: UInt64? = nil, key: SubscriptionKey, kind: EventKind?, storeTimeMilliseconds: Int64? = nil,
        verifiedTimeMilliseconds: Int64? = nil, accountID: String? = nil, otherAccountID: String? = nil,
        storeType: String? = nil, storeSubtype: String? = nil, notificationID: String? = nil,
        state: SubscriptionState? = nil, rawPayload: String? = nil, detail: String? = nil,
        rawTransaction: String? = nil, rawRenewalInfo: String? = nil, actor: String? = nil, reason: String? = nil,
        traceID: String? = nil
    ) {
        self.position = position
        self.key = key
        self.kind = kind
        self.storeTimeMilliseconds = storeTimeMilliseconds
        self.verifiedTimeMilliseconds = verifiedTimeMilliseconds
        self.accountID = accountID
        self.otherAccountID = otherAccountID
        self.storeType = storeType
        self.storeSubtype = storeSubtype
        self.notificationID = notificationID
        self.state = state
        self.rawPayload = rawPayload
        self.detail = detail
        self.rawTransaction = rawTransaction
        self.rawRenewalInfo = rawRenewalInfo
        self.actor = actor
        self.reason = reason
        self.traceID = traceID
    }
}
