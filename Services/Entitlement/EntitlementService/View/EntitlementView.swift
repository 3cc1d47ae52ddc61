public import Model
public import Observability
import Wire

/// Every account's subscriptions, in memory, as the ledger's change feed left them: loaded from
/// a snapshot, then kept up by applying changes in feed order. Reads never create an account.
///
/// Kept compact for millions of accounts (`ViewTables`): an account takes 24 bytes (a lowercase
/// UUID id inline, any other id in a text arena), a subscription 56 (an all-digit store id
/// inline, a purchase token in the arena), each index 8 bytes a slot (the entry and half its hash); products are interned. A
/// subscription belongs to the account the ledger last recorded for it, so a transfer moves it
/// from one account to the other; one that belongs to no account grants nothing.
public final class EntitlementView: Sendable {
    /// Guards `tables`: checks read at once, the feed and snapshots write alone.
    let lock = ReadWriteLock(())
    /// A reference that never changes (a snapshot moves its contents in), so a check reads the
    /// tables with no reference counting.
    let tables = ViewTables()
    /// Reads waiting for a position the view has not applied yet.
    let waiters = PositionWaiters()

    public init() {}

    /// The feed position the view reflects; nil until a snapshot is loaded.
    public var position: UInt64? { lock.read { _ in tables.position } }

    /// Whether the view has applied feed position `wanted` (a write's answer).
    func hasApplied(_ wanted: UInt64) -> Bool { (position ?? 0) >= wanted && position != nil }

    /// Calls `done(true)` once the view has applied `wanted` (at once when it has), or
    /// `done(false)` when `within` passes first.
    func whenApplied(
        _ wanted: UInt64, within: Duration, clock: any ServiceClock, _ done: @escaping @Sendable (Bool) -> Void
    ) {
        waiters.wait(for: wanted, applied: { position }, within: within, clock: clock, done)
    }

    /// How many distinct renewal details the view keeps (`RenewalProfile`).
    var renewalProfileCount: Int { lock.read { _ in tables.renewalProfiles.count } }

    /// Accounts that hold a subscription, and subscriptions held by an account.
    public var counts: (accounts: Int, subscriptions: Int) {
        lock.read { _ in (tables.accountsHolding, tables.held) }
    }

    /// Replaces everything with a snapshot taken at `position`.
    public func load(_ subscriptions: [Subscription], position: UInt64) {
        var builder = Builder()
        builder.add(subscriptions)
        install(builder, position: position)
    }

    /// A snapshot being loaded chunk by chunk, beside the view in force until `install`.
    public struct Builder: Sendable {
        fileprivate var tables = ViewTables()
        /// The most subscriptions a snapshot's estimate sizes the indexes for (1 GiB of slots).
        static let mostReserved: UInt64 = 1 << 26

        public init() {}

        public mutating func add(_ subscriptions: [Subscription]) {
            for subscription in subscriptions { tables.put(subscription) }
        }

        /// `add(chunk:)` within the decode budget in force: how many subscriptions the chunk
        /// held, whether it is the last, and the position it carries. Throws `ViewError`.
        public mutating func add(serializedChunk bytes: UnsafeRawBufferPointer) throws(ViewError) -> (
            subscriptions: Int, complete: Bool, position: UInt64
        ) {
            let summary = try add(chunk: bytes)
            return (summary.subscriptions, summary.complete, summary.position)
        }

        /// What a serialized `SnapshotChunk` held besides its subscriptions.
        struct ChunkSummary: Sendable, Equatable {
            var subscriptions = 0
            var complete = false
            var position: UInt64 = 0
            /// When the change at `position` was committed, if the ledger said.
            var positionCommitted: Int64?
        }

        /// Adds the subscriptions of a serialized `SnapshotChunk`, read in place
        /// (`WireSubscription`); its links are the ledger's, not the view's, and are skipped.
        /// Throws `ViewError` for bytes that do not read as a chunk, having added the
        /// subscriptions before the fault (the snapshot is then abandoned).
        mutating func add(chunk bytes: UnsafeRawBufferPointer, budget: DecodeBudget = .current) throws(ViewError)
            -> ChunkSummary
        {
            var summary = ChunkSummary()
            var unknown = 0
            var reader = ProtoWireReader(bytes)
            while let field = reader.next() {
                switch (field.number, field.value) {
                case (1, .bytes(let subscription)):
                    summary.subscriptions += 1
                    guard summary.subscriptions <= budget.maxRepeated else {
                        throw ViewError(
                            .overBudget, "SnapshotChunk.subscriptions: more than \(budget.maxRepeated) elements")
                    }
                    tables.put(try WireSubscription(subscription, maxRepeated: budget.maxRepeated))
                case (2, .bytes): break
                case (3, .varint(let value)): summary.complete = value != 0
                case (4, .varint(let value)): summary.position = value
                case (6, .varint(let value)): summary.positionCommitted = Int64(bitPattern: value)
                case (5, .varint(let value)):
                    // Sized once for what is coming, rather than doubled (and rehashed) all the way.
                    tables.reserve(Int(min(value, Self.mostReserved)))
                case (1...6, _):
                    throw ViewError(.malformed, "SnapshotChunk field \(field.number) has the wrong wire type")
                default:
                    unknown += 1
                    guard unknown <= budget.maxUnknownFields else {
                        throw ViewError(
                            .overBudget,
                            "SnapshotChunk: more than \(budget.maxUnknownFields) fields this schema does not know")
                    }
                }
            }
            guard !reader.isMalformed else {
                throw ViewError(.malformed, "a SnapshotChunk is not well-formed protobuf")
            }
            return summary
        }
    }

    /// Puts a finished snapshot, taken at `position`, in force.
    /// `committed`: when the change at `position` was committed, if known (a later feed is
    /// then checked against it).
    public func install(_ builder: Builder, position: UInt64, committed: Int64? = nil) {
        let fresh = builder.tables
        fresh.position = position
        fresh.positionCommitted = committed
        lock.write { _ in tables.exchange(with: fresh) }
        waiters.reached(position)
        // The old contents, now in `fresh`, are freed with it, outside the lock.
    }

    /// Applies a change of the feed. Returns false, changing nothing, for a change at or before
    /// the view's position (already applied) or before any snapshot.
    @discardableResult
    public func apply(position: UInt64, subscription: Subscription?, committed: Int64? = nil) -> Bool {
        let applied = lock.write { _ in
            guard let current = tables.position, position > current else { return false }
            if let subscription { tables.put(subscription) }
            tables.position = position
            tables.positionCommitted = committed
            return true
        }
        if applied { waiters.reached(position) }
        return applied
    }

    /// Marks the view as at no position (not ready) until the next snapshot: its tables came from
    /// a feed that is not the ledger's.
    public func forgetPosition() {
        lock.write { _ in
            tables.position = nil
            tables.positionCommitted = nil
        }
    }

    /// Checks the change at the view's own position as the ledger sends it again: true when it
    /// is the one the view applied (same commit time; learned now when the view came from a
    /// snapshot), false when the ledger's change there is another (a checkpoint of another
    /// ledger, or of a database restored to before it). Any other position is not judged (true).
    public func confirm(position: UInt64, committed: Int64) -> Bool {
        lock.write { _ in
            guard tables.position == position else { return true }
            guard let known = tables.positionCommitted else {
                tables.positionCommitted = committed
                return true
            }
            return known == committed
        }
    }

    /// Runs `body` under the view's lock with the tables, the account's index (nil for an
    /// account the view does not know) and each product's capabilities under `policy`: keep it
    /// short, and copy nothing out of the tables but what the answer needs.
    func withAccount<T>(
        _ accountID: String, policy: ProductPolicy, _ body: (_ tables: ViewTables, _ account: Int?) -> T
    ) -> T {
        withUTF8Bytes(accountID) { withAccount(utf8: $0, policy: policy, body) }
    }

    /// `withAccount` for an account id given as its UTF-8 bytes.
    func withAccount<T>(
        utf8 accountID: UnsafeBufferPointer<UInt8>, policy: ProductPolicy,
        _ body: (_ tables: ViewTables, _ account: Int?) -> T
    ) -> T {
        let uuid = AccountKey.lowercaseUUID(accountID)
        var answer: T?
        while answer == nil {
            let current = lock.read { _ in
                guard tables.capabilities.generation == policy.generation,
                    tables.capabilities.sets.count == tables.products.count
                else { return false }
                let account: Int?
                if let (high, low) = uuid {
                    account = tables.account(high: high, low: low)
                } else {
                    account = tables.account(text: accountID)
                }
                answer = body(tables, account)
                return true
            }
            if current { break }
            // The policy or the products changed since the capabilities were worked out.
            lock.write { _ in
                tables.capabilities = (
                    policy.generation,
                    tables.products.map {
                        policy.capabilities(store: $0.store, productID: $0.productID, basePlanID: $0.basePlanID)
                    }
                )
                tables.durations = tables.products.map {
                    policy.duration(store: $0.store, productID: $0.productID, basePlanID: $0.basePlanID)
                }
            }
        }
        return answer!
    }

    /// Starts loading into cache what `CheckAccess` reads for each of these serialized requests:
    /// the account's first index slot, the record it leads to, that account's first subscription
    /// and its store id text, one step for every request before the next, so that their cache
    /// misses overlap rather than follow one another. Changes nothing; reads what it can.
    func prefetch(checks payloads: UnsafeBufferPointer<UnsafeRawBufferPointer>) {
        let count = min(payloads.count, 64)
        guard count > 0 else { return }
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: count) { hashes in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { entries in
                lock.read { _ in
                    for i in 0..<count {
                        entries[i] = -1
                        // Read as the check reads it; one it refuses is left alone.
                        guard let id = CheckAccessWire.accountID(in: payloads[i]), (1...256).contains(id.count)
                        else { continue }
                        hashes[i] = tables.accountHash(utf8: id)
                        tables.accountIndex.prefetch(hashes[i])
                        entries[i] = 0
                    }
                    for i in 0..<count where entries[i] == 0 {
                        entries[i] = tables.accountIndex.first(hashes[i]) ?? -1
                        if entries[i] >= 0 { tables.accounts.prefetch(entries[i]) }
                    }
                    for i in 0..<count where entries[i] >= 0 {
                        entries[i] = tables.firstHolding(of: entries[i]) ?? -1
                        if entries[i] >= 0 { tables.holdings.prefetch(entries[i]) }
                    }
                    for i in 0..<count where entries[i] >= 0 {
                        let holding = tables.holdings[entries[i]]
                        // A purchase token is about 150 bytes.
                        if holding.hasTextID { tables.texts.prefetch(holding.id, byteCount: 160) }
                    }
                }
            }
        }
    }

    /// The products the view holds non-renewing purchases of that grant a capability under
    /// `policy` but have no `duration` in it (such a purchase grants nothing), as policy lines
    /// name them, sorted.
    public func undatedNonRenewingProducts(policy: ProductPolicy) -> [String] {
        lock.read { _ in
            tables.nonRenewingProducts.compactMap { index -> String? in
                let product = tables.products[Int(index)]
                guard
                    !policy.capabilities(
                        store: product.store, productID: product.productID, basePlanID: product.basePlanID
                    )
                    .isEmpty,
                    policy.duration(store: product.store, productID: product.productID, basePlanID: product.basePlanID)
                        == nil
                else { return nil }
                return StoreProduct(store: product.store, productID: product.productID).description
            }.sorted()
        }
    }

    /// Logs a warning naming each product `undatedNonRenewingProducts` finds.
    public func warnAboutUndatedNonRenewingProducts(policy: ProductPolicy?, logger: Logger) {
        guard let policy else { return }
        for product in undatedNonRenewingProducts(policy: policy) {
            logger.warning(
                "a non-renewing product has no duration in the policy: its purchases grant nothing",
                ["product": product, "fix": "add \"duration N(h|d|w)\" to its policy line"])
        }
    }

    /// The id of the account that holds subscription `key` now, if one does.
    public func holder(of key: SubscriptionKey) -> String? {
        lock.read { _ in
            withUTF8Bytes(key.storeID) { id -> String? in
                guard let index = tables.holdingIndex(of: StoreKey(key.store, key.environment, id)) else { return nil }
                let owner = tables.holdings[index].owner
                return owner == 0 ? nil : tables.accountID(Int(owner) - 1)
            }
        }
    }

    /// The account's subscriptions (empty for an account the view does not know), as kept.
    public func subscriptions(of accountID: String) -> [Subscription] {
        lock.read { _ in
            guard let account = tables.account(AccountKey(accountID)) else { return [] }
            var subscriptions: [Subscription] = []
            tables.forEachHolding(of: account) { subscriptions.append(tables.subscription($0, account: accountID)) }
            return subscriptions
        }
    }
}
