import Model

/// The ledger's merge rules for a verified state, as pure functions of what the ledger holds and
/// what a request brings; `VerifiedStatePlan` decides a write with them.
enum StateMerge {
    /// `incoming` as it would stand: owned by the account the ledger knows (`account`), and
    /// still naming what replaced it when the ledger knows that (lineage is the ledger's
    /// knowledge, not the store's: a newer state of a replaced purchase names its successor).
    static func candidate(_ incoming: Subscription, current: Subscription?, account: String?) -> Subscription {
        var next = incoming
        next.accountID = account
        next.replacedByStoreID = next.replacedByStoreID ?? current?.replacedByStoreID
        // How the customer holds it does not change along a chain: a state that does not say
        // keeps what was known.
        next.ownership = next.ownership ?? current?.ownership
        return next
    }

    /// Whether `next` replaces `current`: by the total order of states (`Subscription.replaces`),
    /// except that a partial state (one notification's own transaction, the API away) stands only
    /// where the ledger has none, or has that same transaction's.
    static func applies(_ next: Subscription, over current: Subscription?, partial: Bool) -> Bool {
        guard let current else { return true }
        let wins = Subscription.replaces(next, current)
        return partial ? wins && current.latestOrderID == next.latestOrderID : wins
    }

    /// The state a write keeps: `next` when it applies, else the stored one.
    static func standing(next: Subscription, current: Subscription?, applied: Bool) -> Subscription {
        applied ? next : current ?? next
    }

    /// The state that stands after the write, and whether the stored row changes. `accessPeriods`
    /// are the subscription's access periods when the request recorded periods (nil when it
    /// recorded none: the stored ones stay).
    /// `statusIntervals` are the subscription's status intervals when the write worked them out
    /// again (nil: the stored ones stay).
    static func result(
        next: Subscription, current: Subscription?, applied: Bool, accessPeriods: [Period]?,
        statusIntervals: [StatusInterval]? = nil
    ) -> (state: Subscription, saves: Bool) {
        var state = standing(next: next, current: current, applied: applied)
        state.periods = accessPeriods ?? current?.periods ?? []
        state.statusIntervals = statusIntervals ?? current?.statusIntervals ?? []
        let intervalsChange = state.statusIntervals != (current?.statusIntervals ?? [])
        // Play reads a revoked subscription as expired: a revocation of its last period stays
        // in its state whichever read stands.
        if state.key.store == .google, state.state == .expired,
            let revoked = state.periods.last?.revokedTimeMilliseconds
        {
            state.state = .revoked
            state.revokedTimeMilliseconds = revoked
        }
        // An acknowledgement is a fact that never goes back, whichever state stands.
        let acknowledges = !state.acknowledged && (next.acknowledged || current?.acknowledged == true)
        if acknowledges { state.acknowledged = true }
        return (state, applied || accessPeriods != nil || acknowledges || intervalsChange)
    }
}
