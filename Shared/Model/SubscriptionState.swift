/// The normalized lifecycle state of a subscription or purchase, the same for both stores.
/// Raw values are the wire numbers of `subscriptions.common.v1.SubscriptionState`.
public enum SubscriptionState: Int32, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case active = 1
    /// Paid through the current period; renewal switched off.
    case cancelled = 2
    case gracePeriod = 3
    case billingRetry = 4
    case accountHold = 5
    case paused = 6
    case expired = 7
    case revoked = 8
    case pending = 9

    /// Whether the state grants access under the default policy (the policy file may differ):
    /// active and cancelled until expiry, grace until grace end; nothing else.
    public var grantsAccessByDefault: Bool {
        switch self {
        case .active, .cancelled, .gracePeriod: true
        case .billingRetry, .accountHold, .paused, .expired, .revoked, .pending: false
        }
    }

    public var description: String {
        switch self {
        case .active: "active"
        case .cancelled: "cancelled"
        case .gracePeriod: "grace_period"
        case .billingRetry: "billing_retry"
        case .accountHold: "account_hold"
        case .paused: "paused"
        case .expired: "expired"
        case .revoked: "revoked"
        case .pending: "pending"
        }
    }
}
