import Model
import RPC
import Wire

/// `GetAccessTimeline`: an account's access over a span, per capability, as intervals of one
/// kind, each instant in them answered as `CheckAccess` answers it (`AccountAccess.evaluate`, the same union
/// over the account's subscriptions).
extension EntitlementMethods {
    /// The most intervals one answer holds, over all its capabilities (about 100 bytes each).
    static let maxTimelineIntervals = 2000
    static let maxTimelineSpan: Int64 = 50 * 366 * 86_400_000

    static func timeline(_ request: GetAccessTimelineRequest, view: EntitlementView, policy: ProductPolicy?)
        throws(EntitlementError) -> GetAccessTimelineResponse
    {
        try checkAccount(request.accountID.utf8.count)
        if let capability = request.capability { try checkCapability(capability.utf8.count) }
        guard request.fromMilliseconds < request.toMilliseconds else {
            throw EntitlementError(
                .badRequest,
                "to_ms \(request.toMilliseconds) must be after from_ms \(request.fromMilliseconds)")
        }
        guard request.toMilliseconds - request.fromMilliseconds <= maxTimelineSpan else {
            throw EntitlementError(.badRequest, "the span from from_ms to to_ms is longer than 50 years")
        }
        guard let policy else { return GetAccessTimelineResponse() }
        var asked: CapabilityID?
        if let name = request.capability {
            guard let id = policy.capabilityID(named: name) else {
                throw EntitlementError(.unknownCapability, unknownCapability(name))
            }
            asked = id
        }
        let span = request.fromMilliseconds..<request.toMilliseconds
        return view.withAccount(request.accountID, policy: policy) { tables, account in
            var capabilities = asked.map { CapabilitySet([$0]) } ?? .empty
            var instants: Set<Int64> = [span.lowerBound]
            if let account {
                tables.forEachHolding(of: account) { holding in
                    if asked == nil {
                        capabilities = capabilities.union(HoldingAccess.capabilities(of: holding, in: tables))
                    }
                    HoldingAccess.boundaries(of: holding, in: tables, into: &instants)
                }
            }
            let starts = instants.filter { span.contains($0) }.sorted()
            var budget = maxTimelineIntervals
            return GetAccessTimelineResponse(
                capabilities: capabilities.map { capability in
                    let timeline = timeline(
                        of: capability, name: policy.name(of: capability), account: account, starts: starts,
                        end: span.upperBound, tables: tables, rules: policy.access, budget: max(budget, 1))
                    budget -= timeline.intervals.count
                    return timeline
                })
        }
    }

    /// The intervals of one capability, at most `budget`: each start's answer holds until the
    /// next start (nothing the decision reads changes between them); neighbours that say the same
    /// are one.
    static func timeline(
        of capability: CapabilityID, name: String, account: Int?, starts: [Int64], end: Int64, tables: ViewTables,
        rules: AccessRules, budget: Int
    ) -> CapabilityTimeline {
        var intervals: [TimelineInterval] = []
        var truncated = false
        for (index, start) in starts.enumerated() {
            let stop = index + 1 < starts.count ? starts[index + 1] : end
            var interval = TimelineInterval(startMilliseconds: start, endMilliseconds: stop)
            if let (decision, holding) = AccountAccess.evaluate(
                tables, account: account, capability: capability, rules: rules, at: start)
            {
                let fact = HoldingAccess.fact(of: holding, in: tables, at: start)
                interval.kind = kind(decision, holding: holding, fact: fact)
                interval.allowed = decision.isAllowed
                interval.reason = decision.isAllowed ? .granted : denial(decision).map(reason) ?? .noGrant
                interval.grant = grant(
                    holding, capability: capability, tables: tables,
                    until: decision.isAllowed ? Holding.time(decision.wireUntilMilliseconds) : nil)
                if let fact {
                    interval.factStartMilliseconds = fact.start
                    interval.factEndMilliseconds = fact.end
                }
            } else {
                interval.kind = .gap
                interval.reason = .noGrant
            }
            if var last = intervals.last, last.sameAnswer(as: interval) {
                last.endMilliseconds = stop
                intervals[intervals.count - 1] = last
                continue
            }
            guard intervals.count < budget else {
                truncated = true
                break
            }
            intervals.append(interval)
        }
        return CapabilityTimeline(capability: name, intervals: intervals, truncated: truncated)
    }

    private static func denial(_ decision: AccessDecision) -> AccessDecision.Denial? {
        if case .denied(let denial) = decision { return denial }
        return nil
    }

    /// What an instant is, from its answer, the subscription behind it and the fact that holds it.
    static func kind(_ decision: AccessDecision, holding: Holding, fact: HoldingAccess.TimelineFact?) -> TimelineKind {
        switch decision {
        case .allowed:
            if holding.store == .promotional { return .granted }
            if let status = fact?.status { return status == .gracePeriod ? .grace : .otherAllowed }
            if fact == nil {
                // After the last period, in a state the policy allows.
                return holding.subscriptionState == .gracePeriod ? .grace : .otherAllowed
            }
            switch fact?.offer {
            case .freeTrial?: return .trial
            case nil: return .paid
            default: return .offer
            }
        case .denied(.revoked):
            return .revoked
        case .denied(.stateDenies):
            switch fact?.status ?? holding.subscriptionState {
            case .billingRetry?: return .billingRetry
            case .accountHold?: return .accountHold
            case .paused?: return .paused
            case .pending?: return .pending
            default: return .gap
            }
        case .denied:
            return .gap
        }
    }
}

extension TimelineInterval {
    /// Whether `next`, starting where this ends, says the same: kind, answer, subscription and
    /// fact.
    func sameAnswer(as next: TimelineInterval) -> Bool {
        kind == next.kind && allowed == next.allowed && reason == next.reason && grant?.key == next.grant?.key
            && grant?.untilMilliseconds == next.grant?.untilMilliseconds
            && factStartMilliseconds == next.factStartMilliseconds && factEndMilliseconds == next.factEndMilliseconds
    }
}
