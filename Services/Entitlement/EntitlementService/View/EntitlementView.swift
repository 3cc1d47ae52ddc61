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
    /// A product as the policy names it.
    struct Product: Hashable, Sendable {
        let store: Store
        let productID: String
        let basePlanID: String?
    }

    /// Guards `tables`: checks read at once, the feed and snapshots write alone.
    private let lock = ReadWriteLock(())
    /// A reference that never changes (a snapshot moves its contents in), so a check reads the
    /// tables with no reference counting.
    private let tables = ViewTables()

    public init() {}

    /// The feed position the view reflects; nil until a snapshot is loaded.
    public var position: UInt64? { lock.read { _ in tables.position } }

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

        public init() {}

        public mutating func add(_ subscriptions: [Subscription]) {
            for subscription in subscriptions { tables.put(subscription) }
        }

        /// What a serialized `SnapshotChunk` held besides its subscriptions.
        struct ChunkSummary: Sendable, Equatable {
            var subscriptions = 0
            var complete = false
            var position: UInt64 = 0
        }

        /// Adds the subscriptions of a serialized `SnapshotChunk`, read in place
        /// (`WireSubscription`); its links are the ledger's, not the view's, and are skipped.
        /// Throws `RPCError` for bytes that do not read as a chunk, having added the
        /// subscriptions before the fault (the snapshot is then abandoned).
        mutating func add(chunk bytes: UnsafeRawBufferPointer, budget: DecodeBudget = .current) throws(RPCError)
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
                        throw RPCError(
                            .resourceExhausted, "SnapshotChunk.subscriptions: more than \(budget.maxRepeated) elements")
                    }
                    tables.put(try WireSubscription(subscription, maxRepeated: budget.maxRepeated))
                case (2, .bytes): break
                case (3, .varint(let value)): summary.complete = value != 0
                case (4, .varint(let value)): summary.position = value
                case (1...4, _):
                    throw RPCError(.invalidArgument, "SnapshotChunk field \(field.number) has the wrong wire type")
                default:
                    unknown += 1
                    guard unknown <= budget.maxUnknownFields else {
                        throw RPCError(
                            .resourceExhausted,
                            "SnapshotChunk: more than \(budget.maxUnknownFields) fields this schema does not know")
                    }
                }
            }
            guard !reader.isMalformed else {
                throw RPCError(.invalidArgument, "a SnapshotChunk is not well-formed protobuf")
            }
            return summary
        }
    }

    /// Puts a finished snapshot, taken at `position`, in force.
    public func install(_ builder: Builder, position: UInt64) {
        let fresh = builder.tables
        fresh.position = position
        lock.write { _ in tables.exchange(with: fresh) }
        // The old contents, now in `fresh`, are freed with it, outside the lock.
    }

    /// Applies a change of the feed. Returns false, changing nothing, for a change at or before
    /// the view's position (already applied) or before any snapshot.
    @discardableResult
    public func apply(position: UInt64, subscription: Subscription?) -> Bool {
        lock.write { _ in
            guard let current = tables.position, position > current else { return false }
            if let subscription { tables.put(subscription) }
            tables.position = position
            return true
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
                        // CheckAccessRequest.account_id is field 1.
                        guard let id = ProtoWireScanner.lastLengthDelimited(1, in: payloads[i]),
                            (1...256).contains(id.count)
                        else { continue }
                        hashes[i] = ViewTables.accountHash(utf8: id.assumingMemoryBound(to: UInt8.self))
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

/// Renewal details as many subscriptions share them: all but the grace end (the holding's), and
/// the renewal date left out when it is the period's end (`dueAtEnd`).
struct RenewalProfile: Hashable, Sendable {
    var renewal: GrantRenewal
    var dueAtEnd: Bool
    /// Line items (Google add-ons) whose renewal is off, by product id.
    var offProducts: [String] = []
}

/// The view's tables. Accounts and subscriptions, once seen, keep their records (an account
/// that loses its last subscription, a subscription that loses its account, hold nothing): the
/// view only grows until the next snapshot replaces it.
final class ViewTables: @unchecked Sendable {  // used under its view's lock, or by one builder
    var accounts = ChunkedArray<AccountRecord>()
    var accountIndex = SlotTable()
    var holdings = ChunkedArray<Holding>()
    var holdingIndex = SlotTable()
    var texts = TextArena()
    var products: [EntitlementView.Product] = []
    /// `products` by store, product id and base plan.
    var productSlots = SlotTable()
    /// Each product's ids in the text arena, to lend as C strings.
    var productNames: [(productID: UInt64, basePlanID: UInt64?)] = []
    /// Each product's capabilities under the policy of `generation`.
    var capabilities: (generation: UInt64, sets: [CapabilitySet]) = (0, [])
    /// Each product's duration (milliseconds) under the same policy, for non-renewing periods.
    var durations: [Int64?] = []
    /// The periods of subscriptions before their last one (`Holding.earlier`).
    var periodRecords = ChunkedArray<PeriodRecord>()
    /// Products the view saw non-renewing purchases of, by index.
    var nonRenewingProducts = Set<UInt32>()
    /// Subscriptions' renewal details, each distinct one kept once (`Holding.renewal`): most
    /// subscriptions share theirs with many others (a product's price in a storefront, renewal
    /// on, due at the period's end), so they take no memory of their own.
    var renewalProfiles: [RenewalProfile] = []
    var renewalProfileIndex: [RenewalProfile: UInt32] = [:]
    /// The profile the last subscription written took (index + 1; 0 for none).
    var lastRenewalProfile: UInt32 = 0
    /// Subscriptions held by an account, and accounts holding at least one.
    var held = 0
    var accountsHolding = 0
    var position: UInt64?

    init() {}

    /// Swaps every table with `other`'s.
    func exchange(with other: ViewTables) {
        swap(&accounts, &other.accounts)
        swap(&accountIndex, &other.accountIndex)
        swap(&holdings, &other.holdings)
        swap(&holdingIndex, &other.holdingIndex)
        swap(&texts, &other.texts)
        swap(&products, &other.products)
        swap(&productSlots, &other.productSlots)
        swap(&productNames, &other.productNames)
        swap(&capabilities, &other.capabilities)
        swap(&durations, &other.durations)
        swap(&periodRecords, &other.periodRecords)
        swap(&nonRenewingProducts, &other.nonRenewingProducts)
        swap(&renewalProfiles, &other.renewalProfiles)
        swap(&renewalProfileIndex, &other.renewalProfileIndex)
        swap(&lastRenewalProfile, &other.lastRenewalProfile)
        swap(&held, &other.held)
        swap(&accountsHolding, &other.accountsHolding)
        swap(&position, &other.position)
    }

    // MARK: Reading

    /// The index of the account with `key`, if the view has seen it.
    func account(_ key: AccountKey) -> Int? {
        switch key {
        case .uuid(let high, let low): account(high: high, low: low)
        case .text(let text): withUTF8Bytes(text) { account(text: $0) }
        }
    }

    /// The hash an account id (UTF-8) is indexed under.
    static func accountHash(utf8 id: UnsafeBufferPointer<UInt8>) -> UInt64 {
        if let (high, low) = AccountKey.lowercaseUUID(id) { return ViewHash.words(high, low) }
        return ViewHash.bytes(id, tag: 1)
    }

    /// The account whose id is the lowercase UUID of these halves.
    func account(high: UInt64, low: UInt64) -> Int? {
        var probe = accountIndex.probe(ViewHash.words(high, low))
        while let index = accountIndex.next(&probe) {
            let record = accounts[index]
            if !record.isText && record.high == high && record.low == low { return index }
        }
        return nil
    }

    /// The account whose id is `text` (UTF-8) when that is not a lowercase UUID.
    func account(text: UnsafeBufferPointer<UInt8>) -> Int? {
        var probe = accountIndex.probe(ViewHash.bytes(text, tag: 1))
        while let index = accountIndex.next(&probe) {
            let record = accounts[index]
            if record.isText && texts.equals(record.high, text) { return index }
        }
        return nil
    }

    /// The index of the account's first subscription, if it holds any; `holdings[index].next`
    /// leads to the others (index + 1, 0 after the last).
    func firstHolding(of account: Int) -> Int? {
        let first = accounts[account].first
        return first == 0 ? nil : Int(first) - 1
    }

    /// Whether product `product` grants `capability` under the policy the capabilities were
    /// worked out for.
    func grants(_ product: UInt32, _ capability: CapabilityID) -> Bool {
        capabilities.sets[Int(product)].contains(capability)
    }

    /// What holding `holding` means for `capability` at `at` under `rules`, or nil when none of
    /// its products grants the capability. A subscription with periods is judged by them
    /// (`AccessRules.decision(periods:…)`), one without by its state (`decision(for:at:)`).
    func decision(_ holding: Holding, _ capability: CapabilityID, rules: AccessRules, at: Int64) -> AccessDecision? {
        guard holding.isPeriodic else {
            guard grants(holding.product, capability) else { return nil }
            return rules.decision(for: holding.facts, at: at)
        }
        // Play moves `expiryTime` to the end of grace: a Google period already holds its grace,
        // and the state's grace end (read at some moment) adds nothing to it.
        let grace = holding.store == .google ? nil : Holding.time(holding.grace)
        let lastPeriod = interval(
            start: holding.purchase, end: holding.expires, revoked: holding.revoked, product: holding.product,
            kind: holding.kind, capability)
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
        var next = holding.earlier
        while next != 0 {
            let record = periodRecords[Int(next) - 1]
            let period = interval(
                start: record.start, end: record.end, revoked: record.revoked, product: record.product,
                kind: holding.kind, capability)
            granting = granting || period.grants
            if period.grants || !sideBySide { periods.append(period) }
            next = record.next
        }
        guard granting else { return nil }
        if lastPeriod.grants || !sideBySide { periods.append(lastPeriod) }
        return rules.decision(
            periods: periods, kind: holding.facts.productKind, state: holding.subscriptionState,
            grace: grace, at: at)
    }

    /// A period as the rule reads it: a non-renewing one without an end lasts the policy's
    /// duration for its product, and grants nothing without one.
    private func interval(
        start: Int64, end: Int64, revoked: Int64, product: UInt32, kind: UInt8, _ capability: CapabilityID
    ) -> AccessInterval {
        var grants = grants(product, capability)
        var end = Holding.time(end)
        if end == nil, kind == UInt8(ProductKind.nonRenewing.rawValue) {
            if let duration = durations[Int(product)] { end = start + duration } else { grants = false }
        }
        return AccessInterval(start: start, end: end, revoked: Holding.time(revoked), grants: grants)
    }

    /// The product a grant of `capability` by `holding` names: its last period's product when
    /// that grants it, else that of the latest earlier period that does (an add-on, or the
    /// product before a change).
    func grantingProduct(_ holding: Holding, _ capability: CapabilityID) -> UInt32 {
        guard holding.isPeriodic, !grants(holding.product, capability) else { return holding.product }
        var found = holding.product
        var next = holding.earlier
        while next != 0 {
            let record = periodRecords[Int(next) - 1]
            if grants(record.product, capability) { found = record.product }
            next = record.next
        }
        return found
    }

    /// The capabilities any of the holding's periods' products grants.
    func capabilities(of holding: Holding) -> CapabilitySet {
        var set = capabilities.sets[Int(holding.product)]
        var next = holding.isPeriodic ? holding.earlier : 0
        while next != 0 {
            let record = periodRecords[Int(next) - 1]
            set = set.union(capabilities.sets[Int(record.product)])
            next = record.next
        }
        return set
    }

    /// Calls `body` with each subscription the account holds, oldest first.
    func forEachHolding(of account: Int, _ body: (Holding) -> Void) {
        var next = accounts[account].first
        while next != 0 {
            let holding = holdings[Int(next) - 1]
            body(holding)
            next = holding.next
        }
    }

    /// Runs `body` with the holding's store id, product id and base plan id (nil for none) as
    /// C strings that live as long as the call.
    func withGrantCStrings<T>(
        _ holding: Holding, product: UInt32? = nil,
        _ body: (
            _ storeID: UnsafePointer<CChar>, _ productID: UnsafePointer<CChar>, _ basePlanID: UnsafePointer<CChar>?
        )
            -> T
    ) -> T {
        let names = productNames[Int(product ?? holding.product)]
        return texts.withCString(names.productID) { productID in
            func withPlan(_ storeID: UnsafePointer<CChar>) -> T {
                guard let plan = names.basePlanID else { return body(storeID, productID, nil) }
                return texts.withCString(plan) { body(storeID, productID, $0) }
            }
            if holding.hasTextID { return texts.withCString(holding.id) { withPlan($0) } }
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 24) { buffer in
                // The decimal digits of the number, NUL-terminated.
                var number = holding.id
                var digits = 0
                repeat {
                    buffer[22 - digits] = CChar(UInt8(ascii: "0") + UInt8(number % 10))
                    number /= 10
                    digits += 1
                } while number > 0
                buffer[23] = 0
                return withPlan(buffer.baseAddress! + 23 - digits)
            }
        }
    }

    func subscriptionKey(of holding: Holding) -> SubscriptionKey {
        SubscriptionKey(
            store: holding.store, environment: holding.environment,
            storeID: holding.hasTextID ? texts.string(holding.id) : String(holding.id))
    }

    func subscription(_ holding: Holding, account: String) -> Subscription {
        let product = products[Int(holding.product)]
        let facts = holding.facts
        var periods: [Period] = []
        if holding.isPeriodic {
            func period(_ start: Int64, _ end: Int64, _ revoked: Int64, _ productIndex: UInt32) -> Period {
                let named = products[Int(productIndex)]
                return Period(
                    periodID: "", productID: named.productID, basePlanID: named.basePlanID, startMilliseconds: start,
                    endMilliseconds: Holding.time(end), revokedTimeMilliseconds: Holding.time(revoked),
                    productKind: facts.productKind)
            }
            var next = holding.earlier
            while next != 0 {
                let record = periodRecords[Int(next) - 1]
                periods.append(period(record.start, record.end, record.revoked, record.product))
                next = record.next
            }
            periods.append(period(holding.purchase, holding.expires, holding.revoked, holding.product))
        }
        return Subscription(
            key: subscriptionKey(of: holding), accountID: account, productID: product.productID,
            basePlanID: product.basePlanID, productKind: facts.productKind, state: facts.state,
            purchaseTimeMilliseconds: facts.purchase, expiresTimeMilliseconds: facts.expires,
            graceExpiresTimeMilliseconds: facts.grace, revokedTimeMilliseconds: facts.revoked,
            // The successor's id is not kept, only that there is one.
            replacedByStoreID: facts.replaced ? "(replaced)" : nil, periods: periods)
    }

    // MARK: Writing

    /// Records `subscription` as the ledger has it now: its facts, and the account holding it.
    func put(_ subscription: Subscription) {
        let bytes = subscription.serialized()
        bytes.withUnsafeBytes { raw in
            // A value's own encoding reads back: its key has a known store, its texts are UTF-8.
            do { put(try WireSubscription(raw, maxRepeated: .max)) } catch {
                preconditionFailure("a Subscription's encoding did not read back: \(error)")
            }
        }
    }

    /// Records a subscription read from its wire form: its facts, and the account holding it.
    func put(_ subscription: WireSubscription) {
        let key = StoreKey(subscription.store, subscription.environment, subscription.storeID)
        let owner = subscription.accountID.map { accountIndex(utf8: $0) }
        var keyBits = key.keyBits
        if subscription.isReplaced { keyBits |= Holding.replaced }
        let kind = subscription.productKind
        let store = subscription.store
        var holding = Holding(
            id: 0, purchase: subscription.purchase, expires: subscription.expires, grace: subscription.grace,
            revoked: subscription.revoked, product: intern(store, subscription.productID, subscription.basePlanID),
            owner: 0, next: 0, keyBits: keyBits, kind: (0...254).contains(kind) ? UInt8(kind) : 255,
            state: UInt8(truncatingIfNeeded: subscription.state?.rawValue ?? 0))
        if let last = subscription.lastPeriod {
            holding.keyBits |= Holding.periodic
            holding.purchase = last.start
            holding.expires = last.end
            holding.revoked = last.revoked
            holding.product = intern(store, last.productID, last.basePlanID)
        }
        // Only an undated one needs the policy's duration (a Google prepaid plan has its end).
        if kind == ProductKind.nonRenewing.rawValue, subscription.lastPeriod.map({ $0.end == 0 }) ?? true {
            nonRenewingProducts.insert(holding.product)
        }
        let index: Int
        if let found = holdingIndex(of: key) {
            index = found
            let previous = holdings[index]
            holding.id = previous.id
            holding.owner = previous.owner
            holding.next = previous.next
            holding.earlier = writePeriods(subscription, reusing: previous.earlier)
            holding.renewal = internRenewal(subscription, expires: holding.expires)
            holdings[index] = holding
        } else {
            guard owner != nil else { return }  // nobody holds it: nothing to keep
            holding.id = key.number ?? texts.store(key.text)
            holding.earlier = writePeriods(subscription, reusing: 0)
            holding.renewal = internRenewal(subscription, expires: holding.expires)
            index = holdings.append(holding)
            holdingIndex.insert(index, hash: Self.hash(of: holdings[index], texts: texts)) {
                Self.hash(of: holdings[$0], texts: texts)
            }
        }
        let previousOwner = holdings[index].owner
        let newOwner = owner.map { UInt32($0 + 1) } ?? 0
        guard previousOwner != newOwner else { return }
        if previousOwner != 0 { unlink(index, from: Int(previousOwner) - 1) }
        if let owner { link(index, to: owner) }
    }

    /// The index of the subscription with `key`, if the view has seen it.
    private func holdingIndex(of key: StoreKey) -> Int? {
        let bits = key.keyBits
        if let number = key.number {
            var probe = holdingIndex.probe(ViewHash.words(UInt64(bits), number))
            while let index = holdingIndex.next(&probe) {
                let holding = holdings[index]
                if holding.keyBits & Holding.keyMask == bits && holding.id == number { return index }
            }
            return nil
        }
        var probe = holdingIndex.probe(ViewHash.bytes(key.text, tag: UInt64(bits)))
        while let index = holdingIndex.next(&probe) {
            let holding = holdings[index]
            if holding.keyBits & Holding.keyMask == bits && texts.equals(holding.id, key.text) { return index }
        }
        return nil
    }

    private static func hash(of holding: Holding, texts: borrowing TextArena) -> UInt64 {
        let bits = UInt64(holding.keyBits & Holding.keyMask)
        return holding.hasTextID
            ? texts.withText(holding.id) { ViewHash.bytes($0, tag: bits) } : ViewHash.words(bits, holding.id)
    }

    private static func hash(of account: AccountRecord, texts: borrowing TextArena) -> UInt64 {
        account.isText
            ? texts.withText(account.high) { ViewHash.bytes($0, tag: 1) } : ViewHash.words(account.high, account.low)
    }

    /// The account whose id is `id` (UTF-8), added when it is new.
    private func accountIndex(utf8 id: UnsafeBufferPointer<UInt8>) -> Int {
        let record: AccountRecord
        if let (high, low) = AccountKey.lowercaseUUID(id) {
            if let found = account(high: high, low: low) { return found }
            record = AccountRecord(high: high, low: low, first: 0, isText: false)
        } else {
            if let found = account(text: id) { return found }
            record = AccountRecord(high: texts.store(id), low: 0, first: 0, isText: true)
        }
        let index = accounts.append(record)
        accountIndex.insert(index, hash: Self.hash(of: record, texts: texts)) {
            Self.hash(of: accounts[$0], texts: texts)
        }
        return index
    }

    /// Appends holding `index` to the account's list.
    private func link(_ index: Int, to account: Int) {
        holdings[index].owner = UInt32(account + 1)
        holdings[index].next = 0
        held += 1
        var last = accounts[account].first
        if last == 0 {
            accounts[account].first = UInt32(index + 1)
            accountsHolding += 1
            return
        }
        while holdings[Int(last) - 1].next != 0 { last = holdings[Int(last) - 1].next }
        holdings[Int(last) - 1].next = UInt32(index + 1)
    }

    /// Takes holding `index` out of the account's list.
    private func unlink(_ index: Int, from account: Int) {
        let entry = UInt32(index + 1)
        let following = holdings[index].next
        if accounts[account].first == entry {
            accounts[account].first = following
            if following == 0 { accountsHolding -= 1 }
        } else {
            var previous = accounts[account].first
            while previous != 0, holdings[Int(previous) - 1].next != entry {
                previous = holdings[Int(previous) - 1].next
            }
            if previous != 0 { holdings[Int(previous) - 1].next = following }
        }
        holdings[index].owner = 0
        holdings[index].next = 0
        held -= 1
    }

    /// Writes the periods before the subscription's last one as a chain of period records, over
    /// the records of the chain starting at `reusing` as far as it goes (a longer chain appends
    /// the rest; the tail of a shorter one is left unused), and returns its first index + 1.
    private func writePeriods(_ subscription: WireSubscription, reusing first: UInt32) -> UInt32 {
        let earlierCount = subscription.periodCount - 1
        guard earlierCount > 0 else { return 0 }
        var head: UInt32 = 0
        var previous: UInt32 = 0
        var reuse = first
        var written = 0
        subscription.forEachPeriod { period in
            guard written < earlierCount else { return }
            written += 1
            let record = PeriodRecord(
                start: period.start, end: period.end, revoked: period.revoked,
                product: intern(subscription.store, period.productID, period.basePlanID), next: 0)
            let slot: UInt32
            if reuse != 0 {
                slot = reuse
                reuse = periodRecords[Int(reuse) - 1].next
                periodRecords[Int(slot) - 1] = record
            } else {
                slot = UInt32(periodRecords.append(record) + 1)
            }
            if previous == 0 { head = slot } else { periodRecords[Int(previous) - 1].next = slot }
            previous = slot
        }
        return head
    }

    /// The index + 1 of the subscription's renewal details among the interned profiles (added
    /// when new); 0 when it has none. `expires` is what the holding keeps as its end: a renewal
    /// due then is kept as "at the end", so it does not make the profile its own.
    private func internRenewal(_ subscription: WireSubscription, expires: Int64) -> UInt32 {
        var renewal = subscription.renewal
        guard renewal != GrantRenewal() || subscription.renewalOffProductCount > 0 else { return 0 }
        let atEnd = renewal.renewalTimeMilliseconds != nil && renewal.renewalTimeMilliseconds == Holding.time(expires)
        if atEnd { renewal.renewalTimeMilliseconds = nil }
        var offProducts: [String] = []
        if subscription.renewalOffProductCount > 0 {
            offProducts.reserveCapacity(subscription.renewalOffProductCount)
            subscription.forEachRenewalOffProduct { offProducts.append($0) }
        }
        let profile = RenewalProfile(renewal: renewal, dueAtEnd: atEnd, offProducts: offProducts)
        // Consecutive subscriptions mostly share their details: compare before hashing.
        if lastRenewalProfile != 0, renewalProfiles[Int(lastRenewalProfile) - 1] == profile {
            return lastRenewalProfile
        }
        let index: UInt32
        if let found = renewalProfileIndex[profile] {
            index = found
        } else {
            index = UInt32(renewalProfiles.count)
            renewalProfiles.append(profile)
            renewalProfileIndex[profile] = index
        }
        lastRenewalProfile = index + 1
        return index + 1
    }

    /// The holding's renewal details as `ListEntitlements` shows them for a grant of `product`
    /// (an add-on whose renewal is off shows that); nil for none.
    func renewal(of holding: Holding, product: UInt32? = nil) -> GrantRenewal? {
        guard holding.renewal != 0 else { return nil }
        let profile = renewalProfiles[Int(holding.renewal) - 1]
        var renewal = profile.renewal
        if profile.dueAtEnd { renewal.renewalTimeMilliseconds = Holding.time(holding.expires) }
        renewal.graceExpiresTimeMilliseconds = Holding.time(holding.grace)
        if let product, profile.offProducts.contains(products[Int(product)].productID) {
            renewal.autoRenew = false
            renewal.renewalTimeMilliseconds = nil
        }
        return renewal
    }

    /// The index of the product (store, product id, base plan; UTF-8), added when new.
    private func intern(
        _ store: Store, _ productID: UnsafeBufferPointer<UInt8>, _ basePlanID: UnsafeBufferPointer<UInt8>?
    ) -> UInt32 {
        var probe = productSlots.probe(Self.productHash(store, productID, basePlanID))
        while let index = productSlots.next(&probe) {
            let names = productNames[index]
            guard products[index].store == store, texts.equals(names.productID, productID) else { continue }
            switch (names.basePlanID, basePlanID) {
            case (nil, nil): return UInt32(index)
            case (let stored?, let plan?) where texts.equals(stored, plan): return UInt32(index)
            default: continue
            }
        }
        let product = EntitlementView.Product(
            store: store, productID: WireSubscription.string(productID),
            basePlanID: basePlanID.map(WireSubscription.string))
        let index = products.count
        products.append(product)
        productNames.append((texts.store(productID), basePlanID.map { texts.store($0) }))
        productSlots.insert(index, hash: Self.productHash(store, productID, basePlanID)) { entry in
            let names = productNames[entry]
            return texts.withText(names.productID) { id in
                guard let plan = names.basePlanID else { return Self.productHash(products[entry].store, id, nil) }
                return texts.withText(plan) { Self.productHash(products[entry].store, id, $0) }
            }
        }
        return UInt32(index)
    }

    private static func productHash(
        _ store: Store, _ productID: UnsafeBufferPointer<UInt8>, _ basePlanID: UnsafeBufferPointer<UInt8>?
    ) -> UInt64 {
        let id = ViewHash.bytes(productID, tag: 2 | UInt64(UInt32(bitPattern: store.rawValue)) << 8)
        return ViewHash.words(id, basePlanID.map { ViewHash.bytes($0, tag: 3) } ?? 0)
    }
}
