public import Model

/// One verified period as the access rule reads it: epoch milliseconds, no strings.
public struct AccessInterval: Sendable, Hashable {
    public var start: Int64
    /// `nil`: no end (a lifetime purchase).
    public var end: Int64?
    /// When the store revoked this period; access from it ends then.
    public var revoked: Int64?
    /// Whether the period's product grants the capability being checked.
    public var grants: Bool

    public init(start: Int64, end: Int64?, revoked: Int64? = nil, grants: Bool = true) {
        self.start = start
        self.end = end
        self.revoked = revoked
        self.grants = grants
    }

    /// Whether `at` falls in the paid time.
    func contains(_ at: Int64) -> Bool { start <= at && at < (end ?? Int64.max) }

    /// What is left of it outside `status`: none, one or two pieces.
    func cut(by status: StatusSpan) -> [AccessInterval] {
        let end = self.end ?? Int64.max
        let statusEnd = status.end ?? Int64.max
        guard status.start < end, statusEnd > start else { return [self] }
        var pieces: [AccessInterval] = []
        if start < status.start {
            var before = self
            before.end = status.start
            if let revoked, revoked >= status.start { before.revoked = nil }
            pieces.append(before)
        }
        if statusEnd < end {
            var after = self
            after.start = statusEnd
            pieces.append(after)
        }
        return pieces
    }
}

/// A state that passed or is passing (grace, billing retry, hold, pause) as the access rule
/// reads it: `Subscription.statusIntervals`, epoch milliseconds.
public struct StatusSpan: Sendable, Hashable {
    public var state: SubscriptionState
    public var start: Int64
    /// `nil`: not ended as far as the recorded facts say.
    public var end: Int64?

    public init(state: SubscriptionState, start: Int64, end: Int64?) {
        self.state = state
        self.start = start
        self.end = end
    }

    func contains(_ at: Int64) -> Bool { start <= at && at < (end ?? Int64.max) }
}

extension AccessRules {
    /// What a subscription with verified periods and status intervals means for a capability at
    /// `at`. The instants inside a status interval are what its state means under the rules: one
    /// they deny (billing retry, hold, pause by default) answers `stateDenies`, also where a
    /// period seems to cover it (Play gives a resumed order no start: it is chained over the
    /// pause), and ends the runs of periods at its start; an ended one they allow (grace) is paid
    /// time like a period, so the days of a grace that ended in a recovery read allowed after
    /// it. Then as `decision(periods:kind:state:grace:at:)`.
    public func decision(
        periods: some Sequence<AccessInterval>, statuses: [StatusSpan], kind: ProductKind?,
        state: SubscriptionState?, grace: Int64?, at: Int64
    ) -> AccessDecision {
        guard !statuses.isEmpty, kind != .consumable, state != .pending else {
            return decision(periods: periods, kind: kind, state: state, grace: grace, at: at)
        }
        let paid = Array(periods)
        var effective = paid
        // An open interval the rules allow is the current state's to judge (after the last
        // period), not paid time without end.
        for status in statuses where allows(status.state) {
            guard let end = status.end else { continue }
            effective.append(AccessInterval(start: status.start, end: end))
        }
        for status in statuses where !allows(status.state) {
            if status.contains(at) { return .denied(.stateDenies) }
            effective = effective.flatMap { $0.cut(by: status) }
        }
        effective.sort { ($0.start, $0.end ?? Int64.max) < ($1.start, $1.end ?? Int64.max) }
        let answer = decision(periods: effective, kind: kind, state: state, grace: grace, at: at)
        // After the paid time, a revocation of its last period that came later is not yet one.
        if answer == .denied(.revoked), let last = paid.last, at >= (last.end ?? Int64.max),
            let revoked = last.revoked, revoked > at
        {
            return .denied(.expired)
        }
        return answer
    }

    /// What a subscription with verified periods means for a capability at `at`, from its
    /// periods (ordered by start, as the ledger's `Period.accessPeriods` gives them, a
    /// non-renewing one's end already worked out from the policy's duration) and, only after
    /// the last one, its current state. A pure function of its inputs.
    ///
    /// In order:
    /// 1. A consumable grants no lasting capability; a `pending` state was never paid: `noGrant`,
    ///    `stateDenies`.
    /// 2. A granting period contains `at`: allowed, unless its revocation is at or before `at`
    ///    (`revoked`). Access runs to the end of the contiguous run of granting, unrevoked
    ///    periods from there (an early renewal starts where the old period ends), or to a
    ///    revocation inside that run; when the run reaches the last period and the state gives
    ///    access after it (grace until its end), on to that end. An `at` in the past is judged by
    ///    what was paid then, with the revocations known now.
    /// 3. `at` before the first granting period: `noGrant`.
    /// 4. `at` after the last period, when that period grants: `revoked` when it was revoked at
    ///    or before `at`; otherwise the state decides: `expired`, `revoked` (`revoked`, but
    ///    `expired` when the last period's revocation came after `at`), none (`stateDenies`), a
    ///    state the rules deny (`stateDenies`), a state they allow gives access until the grace
    ///    end when there is one after `at`, and is `expired` otherwise (`active` and `cancelled`
    ///    end with their period).
    /// 5. Otherwise (a gap between periods, a later product that does not grant it): `expired`.
    public func decision(
        periods: some Sequence<AccessInterval>, kind: ProductKind?, state: SubscriptionState?, grace: Int64?,
        at: Int64
    ) -> AccessDecision {
        if kind == .consumable { return .denied(.noGrant) }
        if state == .pending { return .denied(.stateDenies) }
        var sawGranting = false
        var beforeFirst = false
        var revokedAt = false
        // The run of granting periods that contains `at`: where it ends so far (`Int64.max`: no
        // end), and whether it is still open: unrevoked and reaching the latest period seen.
        var runEnd: Int64?
        var runOpen = false
        var last: AccessInterval?
        for period in periods {
            last = period
            let periodEnd = min(period.end ?? Int64.max, period.revoked ?? Int64.max)
            if let end = runEnd {
                if runOpen, period.grants, period.start <= end {
                    runEnd = max(end, periodEnd)
                    runOpen = period.revoked == nil
                } else {
                    runOpen = false
                }
                continue
            }
            guard period.grants else { continue }
            if !sawGranting && at < period.start { beforeFirst = true }
            sawGranting = true
            guard period.contains(at) else { continue }
            if let revoked = period.revoked, revoked <= at {
                revokedAt = true
                continue
            }
            runEnd = periodEnd
            runOpen = period.revoked == nil
        }
        if let end = runEnd {
            guard end != Int64.max else { return .allowed(untilMilliseconds: nil) }
            if runOpen, let state, state != .active, state != .cancelled, allows(state),
                let grace, grace > end
            {
                return .allowed(untilMilliseconds: grace)
            }
            return .allowed(untilMilliseconds: end)
        }
        if revokedAt { return .denied(.revoked) }
        if !sawGranting || beforeFirst { return .denied(.noGrant) }
        guard let last, last.grants, at >= (last.end ?? Int64.max) else { return .denied(.expired) }
        if let revoked = last.revoked {
            if revoked <= at { return .denied(.revoked) }
            // Revoked after `at`: then the paid time had ended and the revocation was to come.
            if state == nil || state == .revoked { return .denied(.expired) }
        }
        guard let state else { return .denied(.stateDenies) }
        switch state {
        case .expired: return .denied(.expired)
        case .revoked: return .denied(.revoked)
        case .active, .cancelled: return .denied(.expired)
        default:
            guard allows(state) else { return .denied(.stateDenies) }
            if let grace, grace > at { return .allowed(untilMilliseconds: grace) }
            return .denied(.expired)
        }
    }
}
