public import Model

extension AccessRules {
    /// What `subscription` means for a capability its product grants, at the instant `at`
    /// (epoch milliseconds), under these rules. A pure function of its inputs; it decides
    /// nothing about which product grants what (`ProductPolicy` does that first).
    ///
    /// In order:
    /// 1. A consumable grants no lasting capability: `noGrant`.
    /// 2. Before the purchase time: `noGrant`.
    /// 3. A revocation time at or before `at`: `revoked`. This also holds retroactively: once a
    ///    revocation is known, an `at` after it is denied even if access was answered then.
    /// 4. For an `at` before a known revocation time, the subscription is judged as it was then
    ///    (a subscription now in state `revoked` counts as `active`), and any access it gives ends
    ///    at the revocation time at the latest. State `revoked` without a time: `revoked`.
    /// 5. A non-consumable (lifetime) purchase: allowed with no end (until the revocation time,
    ///    when one is known); `pending` (not paid yet): `stateDenies`.
    /// 6. A subscription another purchase replaced (Google upgrade, downgrade or re-signup by
    ///    `linkedPurchaseToken`, `replacedByStoreID` set): `expired` — the replacement carries on.
    /// 7. By state: `expired`: `expired`; a state the rules deny (always `pending`; by default
    ///    `billing_retry`, `account_hold`, `paused`): `stateDenies`; an allowed state lasts until
    ///    its end — the expiry for `active` and `cancelled`, the grace end (or the expiry when
    ///    there is none) for `grace_period` and any other state the rules allow — and is
    ///    `expired` from then on. A subscription with no expiry time has no end. No state
    ///    (unspecified): `stateDenies`.
    ///
    /// The product id decides, not the product the subscription will renew into: a pending
    /// downgrade (`autoRenewProductID`) does not change today's access, and an upgrade
    /// (Apple: a new product id on the same subscription; Google: a new purchase that replaces
    /// the old one) takes effect at once. A family-shared purchase follows the same rules: the
    /// store's REVOKE ends it like any revocation. Who holds a subscription after a transfer is
    /// the account view's business, not this function's.
    public func decision(for subscription: Subscription, at: Int64) -> AccessDecision {
        if subscription.productKind == .consumable { return .denied(.noGrant) }
        if let start = subscription.purchaseTimeMilliseconds, at < start { return .denied(.noGrant) }
        let revoked = subscription.revokedTimeMilliseconds
        if let revoked, revoked <= at { return .denied(.revoked) }
        var state = subscription.state
        if state == .revoked {
            // Revoked, but `at` is before the revocation: it was in force then.
            guard revoked != nil else { return .denied(.revoked) }
            state = .active
        }
        if subscription.productKind == .nonConsumable {
            if state == .pending { return .denied(.stateDenies) }
            return .allowed(untilMilliseconds: revoked)
        }
        if subscription.replacedByStoreID != nil { return .denied(.expired) }
        guard let state else { return .denied(.stateDenies) }
        if state == .expired { return .denied(.expired) }
        guard allows(state) else { return .denied(.stateDenies) }
        let end: Int64?
        switch state {
        case .active, .cancelled: end = subscription.expiresTimeMilliseconds
        default: end = subscription.graceExpiresTimeMilliseconds ?? subscription.expiresTimeMilliseconds
        }
        if let end, at >= end { return .denied(.expired) }
        switch (end, revoked) {
        case (let end?, let revoked?): return .allowed(untilMilliseconds: min(end, revoked))
        case (let end, let revoked): return .allowed(untilMilliseconds: end ?? revoked)
        }
    }
}
