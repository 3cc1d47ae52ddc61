import Foundation
import Model
import Wire

/// Stored App Store access periods derived again when the rules that derive them change.
///
/// A subscription's state carries its access periods, derived from its recorded periods when it
/// is written. When the rules change (`Period.accessPeriods`), a state nothing writes again would
/// keep the answer of the old rules: a chain that ended, or one whose customer upgraded after a
/// renewal was charged early, may get no store fact for a month or ever. So a ledger that starts
/// under newer rules than the stored states were derived with reads every App Store subscription
/// with recorded periods, a page at a time, derives its periods again and writes each one that
/// differs as a change of the feed (views and the event log take it like any other), then
/// records the version in the `ledger.access-rules` cursor. One instance runs the pass at a time
/// (the `ledger.access-rules` lease, renewed with each page). A pass cut short is run again from
/// the start: a state derived already compares equal and is not written twice.
extension LedgerVerifiedStates {
    static let accessRulesPage = 200

    /// One page of the pass.
    public struct AccessRulesPage: Sendable, Equatable {
        /// Another instance holds the pass: nothing was read.
        public var elsewhere = false
        /// Subscriptions read and written again.
        public var read = 0
        public var changed = 0
        /// Where the next page starts; nil when this one was the last (the version is recorded).
        var next: PairCursor?

        public var isLast: Bool { next == nil }
    }

    /// Derives the App Store subscriptions with recorded periods after `after` (by environment
    /// and store id) again, up to `limit` of them, in one write, as `owner` (the pass's lease).
    /// Nil when the stored states are derived with the current rules already.
    func deriveAccessAgain(after: PairCursor?, owner: String, limit: Int = accessRulesPage) async throws
        -> AccessRulesPage?
    {
        let version = Ledger.appStoreAccessRulesVersion
        let at = transactions.now()
        return try await transactions.write { tx in
            let store = LedgerStore(tx)
            guard try store.cursor(Ledger.accessRulesCursor).value < version else { return nil }
            let lease = try LedgerCursors.takeLease(
                store, Ledger.accessRulesLease, owner: owner, for: Ledger.accessRulesLeaseMilliseconds,
                at: transactions.leaseNow())
            guard lease.held else { return AccessRulesPage(elsewhere: true) }
            let rows = try store.applePeriodStates(after: after, limit: limit)
            var page = AccessRulesPage(read: rows.count)
            for index in 0..<rows.count {
                // A state or a period that does not read is left to the snapshot's and the
                // operator's checks (`GetSubscription` names it).
                guard var state = try? LedgerStore.decode(Subscription.self, rows[index].stored),
                    let recorded = try? store.storedPeriods(state.key), !recorded.isEmpty
                else { continue }
                let access = PeriodRecord.accessPeriods(recorded, of: state.key, ownership: state.ownership)
                guard access != state.periods else { continue }
                state.periods = access
                try store.saveStateChange(state, at: at)
                page.changed += 1
            }
            if rows.count == limit {
                page.next = rows[rows.count - 1].cursor
            } else {
                try store.raiseCursor(Ledger.accessRulesCursor, to: version, at: at)
            }
            return page
        }
    }

    /// The whole pass, as `owner`: nil when nothing needed deriving again, else the
    /// subscriptions read and written again (`elsewhere` when another instance holds the pass).
    /// Stops between pages when its task is cancelled; a pass cut short starts over.
    public func deriveAccessAgain(owner: String) async throws -> AccessRulesPage? {
        guard var page = try await deriveAccessAgain(after: nil, owner: owner) else { return nil }
        var total = page
        while let next = page.next {
            try Task.checkCancellation()
            // Another instance may finish the pass meanwhile.
            guard let following = try await deriveAccessAgain(after: next, owner: owner) else { break }
            page = following
            total.read += page.read
            total.changed += page.changed
            total.elsewhere = page.elsewhere
        }
        total.next = nil
        return total
    }
}
