import Model

/// What the view counts for `/metrics`, kept up as subscriptions are put (never by a scan per
/// scrape): the subscriptions accounts hold, by store, state and product, and the held ones in
/// a state whose access may run past their last period's end (grace, and whatever else the
/// policy lets a lapsed subscription keep), which a scrape then judges at its instant.
extension ViewTables {
    /// What a held subscription counts under.
    struct HeldKind: Hashable, Sendable {
        var store: Store
        /// `SubscriptionState.rawValue`, 0 for none.
        var state: UInt8
        /// Index into `products`.
        var product: UInt32
    }

    /// The kind `holding` counts under; nil when no account holds it.
    func heldKind(_ holding: Holding) -> HeldKind? {
        holding.owner == 0 ? nil : HeldKind(store: holding.store, state: holding.state, product: holding.product)
    }

    /// Moves holding `index` from the count of `previously` (its kind before it was put) to that
    /// of its kind now.
    func countHolding(_ index: Int, previously: HeldKind?) {
        let holding = holdings[index]
        let kind = heldKind(holding)
        if kind != previously {
            if let previously {
                let left = (heldByKind[previously] ?? 1) - 1
                heldByKind[previously] = left > 0 ? left : nil
            }
            if let kind { heldByKind[kind, default: 0] += 1 }
        }
        if kind != nil, Self.mayOutlastPeriod(holding.subscriptionState) {
            outlastingCandidates.insert(index)
        } else {
            outlastingCandidates.remove(index)
        }
    }

    /// Counts every holding again (tables read from a checkpoint, which does not keep the counts).
    func recountHeld() {
        heldByKind = [:]
        outlastingCandidates = []
        for index in 0..<holdings.count { countHolding(index, previously: nil) }
    }

    /// Whether a subscription in `state` can have access after its last period ends: the
    /// states whose access lasts to the grace end (`AccessRules.decision`), when a policy allows them.
    static func mayOutlastPeriod(_ state: SubscriptionState?) -> Bool {
        switch state {
        case .gracePeriod?, .billingRetry?, .accountHold?, .paused?: true
        default: false
        }
    }

    /// The held subscriptions of each store whose access under `rules` at `now` runs past the
    /// end of their last verified period: allowed, with that end (`expires`) passed.
    func accessBeyondVerified(rules: AccessRules, now: Int64) -> [Store: Int] {
        var counts: [Store: Int] = [:]
        for index in outlastingCandidates {
            let holding = holdings[index]
            guard holding.expires != 0, holding.expires <= now,
                case .allowed = rules.decision(for: holding.facts, at: now)
            else { continue }
            counts[holding.store, default: 0] += 1
        }
        return counts
    }
}
