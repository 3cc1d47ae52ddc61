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
        decision(for: AccessFacts(subscription), at: at)
    }

    /// `decision(for:at:)` on the facts of a subscription the rule reads.
    public func decision(for facts: AccessFacts, at: Int64) -> AccessDecision {
        if facts.productKind == .consumable { return .denied(.noGrant) }
        if let start = facts.purchase, at < start { return .denied(.noGrant) }
        let revoked = facts.revoked
        if let revoked, revoked <= at { return .denied(.revoked) }
        var state = facts.state
        if state == .revoked {
            // Revoked, but `at` is before the revocation: it was in force then.
            guard revoked != nil else { return .denied(.revoked) }
            state = .active
        }
        if facts.productKind == .nonConsumable {
            if state == .pending { return .denied(.stateDenies) }
            return .allowed(untilMilliseconds: revoked)
        }
        if facts.replaced { return .denied(.expired) }
        guard let state else { return .denied(.stateDenies) }
        if state == .expired { return .denied(.expired) }
        guard allows(state) else { return .denied(.stateDenies) }
        let end: Int64?
        switch state {
        case .active, .cancelled: end = facts.expires
        default: end = facts.grace ?? facts.expires
        }
        if let end, at >= end { return .denied(.expired) }
        switch (end, revoked) {
        case (let end?, let revoked?): return .allowed(untilMilliseconds: min(end, revoked))
        case (let end, let revoked): return .allowed(untilMilliseconds: end ?? revoked)
        }
    }
}

/// What the access rule reads of a subscription: its kind, state and times (epoch ms), and
/// whether another purchase replaced it. No strings, so a check allocates nothing for it.
public struct AccessFacts: Sendable, Hashable {
    public var productKind: ProductKind?
    public var state: SubscriptionState?
    public var purchase: Int64?
    public var expires: Int64?
    public var grace: Int64?
    public var revoked: Int64?
    public var replaced: Bool

    public init(
        productKind: ProductKind?, state: SubscriptionState?, purchase: Int64?, expires: Int64?, grace: Int64?,
        revoked: Int64?, replaced: Bool
    ) {
        self.productKind = productKind
        self.state = state
        self.purchase = purchase
        self.expires = expires
        self.grace = grace
        self.revoked = revoked
        self.replaced = replaced
    }

    public init(_ subscription: Subscription) {
        self.init(
            productKind: subscription.productKind, state: subscription.state,
            purchase: subscription.purchaseTimeMilliseconds, expires: subscription.expiresTimeMilliseconds,
            grace: subscription.graceExpiresTimeMilliseconds, revoked: subscription.revokedTimeMilliseconds,
            replaced: subscription.replacedByStoreID != nil)
    }
}
