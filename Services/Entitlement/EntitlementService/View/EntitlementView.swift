public import Model
import Synchronization

/// Every account's subscriptions, in memory, as the ledger's change feed left them: loaded from
/// a snapshot, then kept up by applying changes in feed order. Reads never create an account.
///
/// Kept compact for millions of accounts: an account id that is a lowercase UUID takes 16 bytes,
/// an all-digit store id (Apple's) 8, products are interned, and each subscription keeps only
/// what access decisions and grants need. A subscription belongs to the account the ledger last
/// recorded for it, so a transfer moves it from one account to the other; one that belongs to
/// no account is not kept (no read can reach it).
public final class EntitlementView: Sendable {
    /// A product as the policy names it.
    struct Product: Hashable, Sendable {
        let store: Store
        let productID: String
        let basePlanID: String?
    }

    /// An account's subscriptions: one inline (most accounts), more in an array.
    enum Holdings: Sendable {
        case one(Holding)
        case many([Holding])

        var all: [Holding] {
            switch self {
            case .one(let holding): [holding]
            case .many(let holdings): holdings
            }
        }

        /// `holdings` as stored: nil for none, inline for one.
        init?(_ holdings: [Holding]) {
            switch holdings.count {
            case 0: return nil
            case 1: self = .one(holdings[0])
            default: self = .many(holdings)
            }
        }
    }

    fileprivate struct State {
        var accounts: [AccountKey: Holdings] = [:]
        /// Who holds each subscription, by a 64-bit hash of its key (8 bytes instead of the key);
        /// the account's holdings are then searched by the exact key.
        var owners: [UInt64: AccountKey] = [:]
        /// Hashes two keys share (next to never): their holders are found by searching.
        var collided: Set<UInt64> = []
        var products: [Product] = []
        var productIndex: [Product: UInt32] = [:]
        /// Each product's capabilities under the policy of `version`.
        var capabilities: (version: String, sets: [CapabilitySet])?
        var position: UInt64?
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
        state.withLock { ($0.accounts.count, $0.owners.count) }
    }

    /// Replaces everything with a snapshot taken at `position`.
    public func load(_ subscriptions: [Subscription], position: UInt64) {
        var builder = Builder()
        builder.add(subscriptions)
        install(builder, position: position)
    }

    /// A snapshot being loaded chunk by chunk, beside the view in force until `install`.
    public struct Builder: Sendable {
        fileprivate var state = State()

        public init() {}

        public mutating func add(_ subscriptions: [Subscription]) {
            for subscription in subscriptions { EntitlementView.put(subscription, into: &state) }
        }
    }

    /// Puts a finished snapshot, taken at `position`, in force.
    public func install(_ builder: Builder, position: UInt64) {
        var fresh = builder.state
        fresh.position = position
        state.withLock { $0 = fresh }
    }

    /// Applies a change of the feed. Returns false, changing nothing, for a change at or before
    /// the view's position (already applied) or before any snapshot.
    @discardableResult
    public func apply(position: UInt64, committedMilliseconds: Int64?, subscription: Subscription?) -> Bool {
        state.withLock { state in
            guard let current = state.position, position > current else { return false }
            if let subscription { Self.put(subscription, into: &state) }
            state.position = position
            state.committedMilliseconds = committedMilliseconds ?? state.committedMilliseconds
            return true
        }
    }

    /// Runs `body` on the account's holdings with each product's capabilities under `policy`,
    /// under the view's lock: keep it short.
    func withAccount<T>(
        _ accountID: String, policy: ProductPolicy,
        _ body: (_ holdings: [Holding], _ capabilities: [CapabilitySet], _ products: [Product]) -> T
    ) -> T {
        let account = AccountKey(accountID)
        return state.withLock { state in
            if state.capabilities?.version != policy.version || state.capabilities?.sets.count != state.products.count {
                state.capabilities = (
                    policy.version,
                    state.products.map {
                        policy.capabilities(store: $0.store, productID: $0.productID, basePlanID: $0.basePlanID)
                    }
                )
            }
            return body(state.accounts[account]?.all ?? [], state.capabilities!.sets, state.products)
        }
    }

    /// The account's subscriptions (empty for an account the view does not know), as kept.
    public func subscriptions(of accountID: String) -> [Subscription] {
        state.withLock { state in
            (state.accounts[AccountKey(accountID)]?.all ?? []).map {
                Self.subscription($0, account: accountID, products: state.products)
            }
        }
    }

    /// Every subscription kept, ordered by key (to compare views).
    public func all() -> [Subscription] {
        state.withLock { state in
            state.accounts.flatMap { account, holdings in
                holdings.all.map { Self.subscription($0, account: account.text, products: state.products) }
            }
        }.sorted { $0.key.description < $1.key.description }
    }

    // MARK: Storage

    fileprivate static func put(_ subscription: Subscription, into state: inout State) {
        let key = StoreKey(subscription.key)
        let hash = key.stableHash
        let owner = subscription.accountID.map(AccountKey.init)
        // Take it from the account that held it, when that is another one.
        if state.collided.contains(hash) {
            if let holder = searchHolder(key, in: state), holder != owner { _ = remove(key, from: holder, in: &state) }
        } else if let previous = state.owners[hash], previous != owner {
            _ = remove(key, from: previous, in: &state)
            state.owners[hash] = nil
        }
        guard let owner else { return }
        let holding = Holding(
            key: key, product: intern(subscription, into: &state), kind: UInt8(subscription.productKind?.rawValue ?? 0),
            state: UInt8(subscription.state?.rawValue ?? 0), replaced: subscription.replacedByStoreID != nil,
            purchase: subscription.purchaseTimeMilliseconds ?? 0, expires: subscription.expiresTimeMilliseconds ?? 0,
            grace: subscription.graceExpiresTimeMilliseconds ?? 0, revoked: subscription.revokedTimeMilliseconds ?? 0)
        var holdings = state.accounts[owner]?.all ?? []
        if let index = holdings.firstIndex(where: { $0.key == key }) {
            holdings[index] = holding
        } else {
            holdings.append(holding)
        }
        state.accounts[owner] = Holdings(holdings)
        guard !state.collided.contains(hash) else { return }
        // A hash already recorded for another key (another holder, or another key of this
        // account) marks a collision: from then on that hash's holders are searched for.
        if let recorded = state.owners[hash],
            recorded != owner || holdings.contains(where: { $0.key != key && $0.key.stableHash == hash })
        {
            state.collided.insert(hash)
            state.owners[hash] = nil
        } else {
            state.owners[hash] = owner
        }
    }

    /// The account holding `key`, by looking at every account.
    private static func searchHolder(_ key: StoreKey, in state: State) -> AccountKey? {
        state.accounts.first { $0.value.all.contains { $0.key == key } }?.key
    }

    /// Takes `key` out of `account`'s holdings; false when the account does not hold it.
    private static func remove(_ key: StoreKey, from account: AccountKey, in state: inout State) -> Bool {
        guard var holdings = state.accounts[account]?.all, let index = holdings.firstIndex(where: { $0.key == key })
        else { return false }
        holdings.remove(at: index)
        state.accounts[account] = Holdings(holdings)
        return true
    }

    private static func intern(_ subscription: Subscription, into state: inout State) -> UInt32 {
        let product = Product(
            store: subscription.key.store, productID: subscription.productID, basePlanID: subscription.basePlanID)
        if let index = state.productIndex[product] { return index }
        let index = UInt32(state.products.count)
        state.products.append(product)
        state.productIndex[product] = index
        return index
    }

    static func subscription(_ holding: Holding, account: String, products: [Product]) -> Subscription {
        let product = products[Int(holding.product)]
        var subscription = holding.decisionInput
        subscription.key = holding.key.subscriptionKey
        subscription.accountID = account
        subscription.productID = product.productID
        subscription.basePlanID = product.basePlanID
        // The successor's id is not kept, only that there is one.
        subscription.replacedByStoreID = holding.replaced ? "(replaced)" : nil
        return subscription
    }
}
