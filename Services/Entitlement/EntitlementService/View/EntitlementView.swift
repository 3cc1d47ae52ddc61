public import Model
import Synchronization

/// Every account's subscriptions, in memory, as the ledger's change feed left them: loaded from
/// a snapshot, then kept up by applying changes in feed order. Reads never create an account.
///
/// A subscription is kept trimmed to what access decisions and grants need; it belongs to the
/// account the ledger last recorded for it, so a transfer moves it from one account to the other.
public final class EntitlementView: Sendable {
    private struct State {
        var subscriptions: [SubscriptionKey: Subscription] = [:]
        var byAccount: [String: [SubscriptionKey]] = [:]
        /// The feed position the view reflects; nil before the first snapshot.
        var position: UInt64?
        /// The commit time of the newest change applied.
        var committedMilliseconds: Int64?
    }

    private let state = Mutex(State())

    public init() {}

    /// The feed position the view reflects; nil until a snapshot is loaded.
    public var position: UInt64? { state.withLock { $0.position } }

    /// The commit time (ms) of the newest change applied.
    public var committedMilliseconds: Int64? { state.withLock { $0.committedMilliseconds } }

    /// Accounts and subscriptions held (for metrics and tests).
    public var counts: (accounts: Int, subscriptions: Int) {
        state.withLock { ($0.byAccount.count, $0.subscriptions.count) }
    }

    /// Replaces everything with a snapshot taken at `position`.
    public func load(_ subscriptions: [Subscription], position: UInt64) {
        var fresh = State()
        fresh.subscriptions.reserveCapacity(subscriptions.count)
        for subscription in subscriptions { Self.put(Self.trimmed(subscription), into: &fresh) }
        fresh.position = position
        state.withLock { $0 = fresh }
    }

    /// Applies a change of the feed. Returns false, changing nothing, for a change at or before
    /// the view's position (already applied) or before any snapshot.
    @discardableResult
    public func apply(position: UInt64, committedMilliseconds: Int64?, subscription: Subscription?) -> Bool {
        state.withLock { state in
            guard let current = state.position, position > current else { return false }
            if let subscription { Self.put(Self.trimmed(subscription), into: &state) }
            state.position = position
            state.committedMilliseconds = committedMilliseconds ?? state.committedMilliseconds
            return true
        }
    }

    /// The account's subscriptions (empty for an account the view does not know).
    public func subscriptions(of accountID: String) -> [Subscription] {
        state.withLock { state in
            (state.byAccount[accountID] ?? []).compactMap { state.subscriptions[$0] }
        }
    }

    /// Every subscription, ordered by key (to compare views).
    public func all() -> [Subscription] {
        state.withLock { Array($0.subscriptions.values) }.sorted { $0.key.description < $1.key.description }
    }

    private static func put(_ subscription: Subscription, into state: inout State) {
        let key = subscription.key
        if let previous = state.subscriptions[key]?.accountID, previous != subscription.accountID {
            state.byAccount[previous]?.removeAll { $0 == key }
            if state.byAccount[previous]?.isEmpty == true { state.byAccount[previous] = nil }
        }
        let isNew = state.subscriptions.updateValue(subscription, forKey: key)?.accountID != subscription.accountID
        if isNew, let account = subscription.accountID { state.byAccount[account, default: []].append(key) }
    }

    /// What decisions and grants use; the rest (order ids, references, the bundle) is dropped.
    static func trimmed(_ subscription: Subscription) -> Subscription {
        var kept = subscription
        kept.offerID = nil
        kept.storeAccountRef = nil
        kept.latestOrderID = nil
        kept.bundleOrPackage = ""
        kept.revocationReason = nil
        kept.replacesStoreID = nil
        kept.verifiedTimeMilliseconds = nil
        return kept
    }
}
