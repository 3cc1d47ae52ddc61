import Model

/// The recorded periods of the subscriptions a write touches, as the plan sees them while it
/// decides: the stored rows (as stored: without raw data) and the rows the plan writes over them.
struct PeriodRecord: Sendable, Equatable {
    /// Recorded periods by subscription and period id, as stored (no raw data).
    private(set) var rows: [SubscriptionKey: [String: Period]]
    /// The writes decided so far, in order.
    private(set) var writes: [LedgerWrite] = []

    /// `stored`: each subscription's recorded periods as `LedgerStore.storedPeriods` reads them.
    init(stored: [SubscriptionKey: [Period]]) {
        rows = stored.mapValues { periods in
            Dictionary(periods.map { ($0.periodID, $0) }, uniquingKeysWith: { _, last in last })
        }
    }

    /// The periods recorded for `key`, by start then id (at most `limit`, the latest), as a read
    /// of the stored rows would find them after the writes so far.
    func stored(_ key: SubscriptionKey, limit: Int = Ledger.maxStoredPeriodRows) -> [Period] {
        let ordered = (rows[key] ?? [:]).values.sorted {
            ($0.startMilliseconds, $0.periodID) < ($1.startMilliseconds, $1.periodID)
        }
        return Array(ordered.suffix(limit))
    }

    /// Records each period unless the stored version of it stands: Apple signs each version, so
    /// one stands (`Period.standing`); Google's versions are partial views of one order and are
    /// combined (`Period.combined`). Returns every period of the subscription afterwards (those
    /// written with the raw data they brought) when any row changed, nil when none did.
    mutating func record(_ key: SubscriptionKey, _ periods: [Period]) -> [Period]? {
        guard !periods.isEmpty else { return nil }
        let google = key.store == .google
        func merge(_ a: Period, _ b: Period) -> Period { google ? Period.combined(a, b) : Period.standing(a, b) }
        var incoming: [String: Period] = [:]
        for period in periods {
            incoming[period.periodID] = incoming[period.periodID].map { merge($0, period) } ?? period
        }
        var current: [String: Period] = [:]
        for period in stored(key) { current[period.periodID] = period }
        var changed = false
        for (id, arriving) in incoming.sorted(by: { $0.key < $1.key }) {
            var period = arriving
            if let existing = current[id] {
                let result = merge(existing, arriving)
                guard result.contentHash != existing.contentHash else { continue }
                // Stored versions are read without raw data: where the one that stands brings
                // none, the stored raw data stays.
                period = result
            }
            changed = true
            current[id] = period
            var bare = period
            bare.raw = nil
            rows[key, default: [:]][id] = bare
            writes.append(.savePeriod(key, period))
        }
        guard changed else { return nil }
        return current.values.sorted {
            ($0.startMilliseconds, $0.periodID) < ($1.startMilliseconds, $1.periodID)
        }
    }

    /// Where a Google replacement that became real (an upgrade, downgrade or re-signup whose
    /// state is no longer pending) moves access from the replaced token to the new one, from
    /// the new token's recorded `periods`: an immediate change ends the replaced token's access
    /// where the new token's paid time starts as access reads it (its renewals continue its
    /// first order, which a deferred change started where the replaced token's paid time ended:
    /// a later read of a deferred change's token cuts nothing; Play also expires the replaced
    /// token, but that notification may come late or never); a `deferred` one starts the new
    /// token's paid time where the replaced one's ends. `replacedExists`: whether the ledger
    /// holds the replaced token's state. Returns both tokens' recorded periods where they changed.
    mutating func replacement(
        _ key: SubscriptionKey, _ periods: [Period], replacing replacedKey: SubscriptionKey, replacedExists: Bool,
        deferred: Bool
    ) -> (new: [Period], replaced: [Period]?) {
        guard replacedExists, let start = Period.googleAccessPeriods(periods).map(\.startMilliseconds).min()
        else { return (periods, nil) }
        let old = stored(replacedKey)
        if !deferred {
            let cuts = old.filter { ($0.paidEnd ?? Int64.max) > start }.map { period -> Period in
                var cut = period
                cut.stoppedTimeMilliseconds = max(start, period.startMilliseconds)
                return cut
            }
            return (periods, record(replacedKey, cuts))
        }
        guard let oldEnd = old.filter({ $0.revokedTimeMilliseconds == nil }).compactMap(\.paidEnd).max(), oldEnd > start
        else { return (periods, nil) }
        let shifted = periods.filter { $0.startMilliseconds < oldEnd }.map { period -> Period in
            var moved = period
            moved.startMilliseconds = min(oldEnd, period.paidEnd ?? oldEnd)
            return moved
        }
        return (record(key, shifted) ?? periods, nil)
    }

    /// `periods` of `key` as access reads them (`Period.accessPeriods`), the latest `maxPeriods`.
    /// In an Apple family-shared chain a revocation made before its period ended is the end of
    /// the sharing (REVOKE): it also ends the chain's periods that run past it.
    static func accessPeriods(_ periods: [Period], of key: SubscriptionKey, ownership: Ownership?) -> [Period] {
        let access =
            key.store == .google
            ? Period.googleAccessPeriods(periods)
            : Period.accessPeriods(
                periods, clipsAtNextStart: true, revocationEndsChain: ownership == .familyShared)
        return Array(access.suffix(Ledger.maxPeriods))
    }
}
