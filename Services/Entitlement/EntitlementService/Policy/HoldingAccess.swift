import Model

/// What one subscription of the view means for a capability at an instant: its periods, status
/// intervals, state and grace as the view holds them, read through the access rules
/// (`AccessRules.decision(periods:…)`, `decision(for:at:)`), with what each of its products
/// grants under the policy the view's capabilities were worked out for. Pure functions of those
/// values: they change nothing and allocate only for a subscription with earlier periods.
enum HoldingAccess {
    /// Whether product `product` grants `capability` under the policy the capabilities were
    /// worked out for; any product does for nil (the subscription's own access, whatever it
    /// grants).
    static func grants(_ product: UInt32, _ capability: CapabilityID?, in tables: ViewTables) -> Bool {
        guard let capability else { return true }
        return tables.capabilities.sets[Int(product)].contains(capability)
    }

    /// What holding `holding` means for `capability` (nil: for the access it gives at all) at
    /// `at` under `rules`, or nil when none of its products grants the capability. A subscription
    /// with periods is judged by them (`AccessRules.decision(periods:…)`), one without by its
    /// state (`decision(for:at:)`).
    static func decision(
        _ holding: Holding, _ capability: CapabilityID?, in tables: ViewTables, rules: AccessRules, at: Int64
    ) -> AccessDecision? {
        guard holding.isPeriodic else {
            guard grants(holding.product, capability, in: tables) else { return nil }
            return rules.decision(for: holding.facts, at: at)
        }
        // Play moves `expiryTime` to the end of grace: a Google period already holds its grace,
        // and the state's grace end (read at some moment) adds nothing to it.
        let grace = holding.store == .google ? nil : Holding.time(holding.grace)
        let lastPeriod = interval(
            start: holding.purchase, end: holding.expires, revoked: holding.revoked, product: holding.product,
            kind: holding.kind, capability, in: tables)
        var granting = lastPeriod.grants
        guard holding.earlier != 0 else {
            guard granting else { return nil }
            return rules.decision(
                periods: CollectionOfOne(lastPeriod), kind: holding.facts.productKind,
                state: holding.subscriptionState, grace: grace, at: at)
        }
        // A Google purchase's line items (a base plan and its add-ons) run side by side: each
        // capability is judged by the periods of the products that grant it.
        let sideBySide = holding.store == .google
        var periods: [AccessInterval] = []
        var statuses: [StatusSpan] = []
        for record in tables.earlier(of: holding) {
            if let state = record.status {
                statuses.append(StatusSpan(state: state, start: record.start, end: Holding.time(record.end)))
                continue
            }
            let period = interval(
                start: record.start, end: record.end, revoked: record.revoked, product: record.productIndex,
                kind: holding.kind, capability, in: tables)
            granting = granting || period.grants
            if period.grants || !sideBySide { periods.append(period) }
        }
        guard granting else { return nil }
        if lastPeriod.grants || !sideBySide { periods.append(lastPeriod) }
        return rules.decision(
            periods: periods, statuses: statuses, kind: holding.facts.productKind,
            state: holding.subscriptionState, grace: grace, at: at)
    }

    /// A period as the rule reads it: a non-renewing one without an end lasts the policy's
    /// duration for its product, and grants nothing without one.
    private static func interval(
        start: Int64, end: Int64, revoked: Int64, product: UInt32, kind: UInt8, _ capability: CapabilityID?,
        in tables: ViewTables
    ) -> AccessInterval {
        var grants = grants(product, capability, in: tables)
        var end = Holding.time(end)
        if end == nil, kind == UInt8(ProductKind.nonRenewing.rawValue) {
            if let duration = tables.durations[Int(product)] { end = start + duration } else { grants = false }
        }
        return AccessInterval(start: start, end: end, revoked: Holding.time(revoked), grants: grants)
    }

    /// The product a grant of `capability` by `holding` names: its last period's product when
    /// that grants it, else that of the latest earlier period that does (an add-on, or the
    /// product before a change).
    static func grantingProduct(_ holding: Holding, _ capability: CapabilityID, in tables: ViewTables) -> UInt32 {
        guard holding.isPeriodic, !grants(holding.product, capability, in: tables) else { return holding.product }
        var found = holding.product
        for record in tables.earlier(of: holding)
        where record.status == nil && grants(record.productIndex, capability, in: tables) {
            found = record.productIndex
        }
        return found
    }

    /// The capabilities any of the holding's periods' products grants.
    static func capabilities(of holding: Holding, in tables: ViewTables) -> CapabilitySet {
        var set = tables.capabilities.sets[Int(holding.product)]
        for record in tables.earlier(of: holding) where record.status == nil {
            set = set.union(tables.capabilities.sets[Int(record.productIndex)])
        }
        return set
    }
}
