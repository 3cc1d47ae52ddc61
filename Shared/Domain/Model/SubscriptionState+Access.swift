extension SubscriptionState {
    /// Whether the state grants access under the default policy (the policy file may differ):
    /// active and cancelled until expiry, grace until grace end; nothing else.
    public var grantsAccessByDefault: Bool {
        switch self {
        case .active, .cancelled, .gracePeriod: true
        case .billingRetry, .accountHold, .paused, .expired, .revoked, .pending: false
        }
    }
}
