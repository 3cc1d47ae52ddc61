import Model
import Wire

/// Renewal details as many subscriptions share them: all but the grace end (the holding's), and
/// the renewal date left out when it is the period's end (`dueAtEnd`).
struct RenewalProfile: Hashable, Sendable {
    var renewal: GrantRenewal
    var dueAtEnd: Bool
    /// Line items (Google add-ons) whose renewal is off, by product id.
    var offProducts: [String] = []
    /// The app's bundle id or package name (Play's subscription page names it).
    var bundleOrPackage: String?
}

/// The view's tables: its records, their indexes, and the writing of records. Accounts and
/// subscriptions, once seen, keep their records (an account that loses its last subscription, a
/// subscription that loses its account, hold nothing): the view only grows until the next
/// snapshot replaces it. What a subscription means for access is the policy's to say
/// (`HoldingAccess`, `AccountAccess`); answers are written from the tables by
/// `ViewTables+Rendering`; checkpoints by `ViewTables+Checkpoint`.
final class ViewTables: @unchecked Sendable {  // used under its view's lock, or by one builder
    /// A product as the policy names it.
    struct Product: Hashable, Sendable {
        let store: Store
        let productID: String
        let basePlanID: String?
    }

    var accounts = ChunkedArray<AccountRecord>()
    var accountIndex = SlotTable()
    var holdings = ChunkedArray<Holding>()
    var holdingIndex = SlotTable()
    var texts = TextArena()
    var products: [ViewTables.Product] = []
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
    /// Subscriptions held by an account, by store, state and product (`ViewTables+Metrics`).
    var heldByKind: [HeldKind: Int] = [:]
    /// The held subscriptions whose state may give access past their last period's end.
    var outlastingCandidates = Set<Int>()
    var position: UInt64?
    /// The commit time of the change at `position`, when the view has seen it: a checkpoint
    /// names it, so that a ledger with other changes at that position is not taken for its own.
    var positionCommitted: Int64?
    /// The seed of the indexes' hashes.
    var hash = ViewHash()

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
        swap(&heldByKind, &other.heldByKind)
        swap(&outlastingCandidates, &other.outlastingCandidates)
        swap(&position, &other.position)
        swap(&positionCommitted, &other.positionCommitted)
        swap(&hash, &other.hash)
    }

    /// Sizes the indexes of still empty tables for about `subscriptions` subscriptions and as
    /// many accounts, so that loading them does not grow (and rehash) the indexes step by step.
    func reserve(_ subscriptions: Int) {
        holdingIndex.reserve(subscriptions)
        accountIndex.reserve(subscriptions)
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
    func accountHash(utf8 id: UnsafeBufferPointer<UInt8>) -> UInt64 {
        if let (high, low) = AccountKey.lowercaseUUID(id) { return hash.words(high, low) }
        return hash.bytes(id, tag: 1)
    }

    /// The account whose id is the lowercase UUID of these halves.
    func account(high: UInt64, low: UInt64) -> Int? {
        var probe = accountIndex.probe(hash.words(high, low))
        while let index = accountIndex.next(&probe) {
            let record = accounts[index]
            if !record.isText && !record.isForgotten && record.high == high && record.low == low { return index }
        }
        return nil
    }

    /// The account whose id is `text` (UTF-8) when that is not a lowercase UUID.
    func account(text: UnsafeBufferPointer<UInt8>) -> Int? {
        var probe = accountIndex.probe(hash.bytes(text, tag: 1))
        while let index = accountIndex.next(&probe) {
            let record = accounts[index]
            if record.isText && !record.isForgotten && texts.equals(record.high, text) { return index }
        }
        return nil
    }

    /// The id of account `index`.
    func accountID(_ index: Int) -> String {
        let record = accounts[index]
        return record.isText ? texts.string(record.high) : AccountKey.text(high: record.high, low: record.low)
    }

    /// The index of the account's first subscription, if it holds any; `holdings[index].next`
    /// leads to the others (index + 1, 0 after the last).
    func firstHolding(of account: Int) -> Int? {
        let first = accounts[account].first
        return first == 0 ? nil : Int(first) - 1
    }

    /// Whether holding `a`'s key comes before `b`'s: by store and environment, then a numeric
    /// store id before a text one, numbers by value and texts by their bytes. An order that does
    /// not depend on when the view learned of either, for answers that must not either.
    func keyPrecedes(_ a: Holding, _ b: Holding) -> Bool {
        let first = a.keyBits & 0xF
        let second = b.keyBits & 0xF
        if first != second { return first < second }
        if a.hasTextID != b.hasTextID { return !a.hasTextID }
        guard a.hasTextID else { return a.id < b.id }
        return texts.withText(a.id) { x in texts.withText(b.id) { y in x.lexicographicallyPrecedes(y) } }
    }

    /// Calls `body` with each subscription the account holds, in the order the view learned of
    /// them.
    func forEachHolding(of account: Int, _ body: (Holding) -> Void) {
        var next = accounts[account].first
        while next != 0 {
            let holding = holdings[Int(next) - 1]
            body(holding)
            next = holding.next
        }
    }

    /// The records of the holding's chain before its last period, in order: its earlier periods,
    /// then its status intervals (none for a subscription judged by its state alone).
    func earlier(of holding: Holding) -> EarlierRecords {
        EarlierRecords(tables: self, link: holding.isPeriodic ? holding.earlier : 0)
    }

    /// A walk along a chain of period records, lent under the view's lock.
    struct EarlierRecords: Sequence, IteratorProtocol {
        // Read while the caller holds the tables (under the view's lock): no reference counting
        // per step.
        unowned(unsafe) let tables: ViewTables
        /// The next record's index + 1; 0 after the last.
        var link: UInt32

        mutating func next() -> PeriodRecord? {
            guard link != 0 else { return nil }
            let record = tables.periodRecords[Int(link) - 1]
            link = record.next
            return record
        }
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
        if subscription.isFamilyShared { keyBits |= Holding.familyShared }
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
            holding.offer = PeriodRecord.offerCode(last.offer)
        }
        // Only an undated one needs the policy's duration (a Google prepaid plan has its end).
        // A grant's end is its own.
        if kind == ProductKind.nonRenewing.rawValue, store != .promotional,
            subscription.lastPeriod.map({ $0.end == 0 }) ?? true
        {
            nonRenewingProducts.insert(holding.product)
        }
        let index: Int
        var previousKind: HeldKind?
        if let found = holdingIndex(of: key) {
            index = found
            let previous = holdings[index]
            previousKind = heldKind(previous)
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
            holdingIndex.insert(index, hash: hash(of: holdings[index])) { hash(of: holdings[$0]) }
        }
        let previousOwner = holdings[index].owner
        let newOwner = owner.map { UInt32($0 + 1) } ?? 0
        if previousOwner != newOwner {
            if previousOwner != 0 { unlink(index, from: Int(previousOwner) - 1) }
            if let owner { link(index, to: owner) }
        }
        countHolding(index, previously: previousKind)
    }

    /// The index of the subscription with `key`, if the view has seen it.
    func holdingIndex(of key: StoreKey) -> Int? {
        let bits = key.keyBits
        if let number = key.number {
            var probe = holdingIndex.probe(hash.words(UInt64(bits), number))
            while let index = holdingIndex.next(&probe) {
                let holding = holdings[index]
                if holding.keyBits & Holding.keyMask == bits && holding.id == number { return index }
            }
            return nil
        }
        var probe = holdingIndex.probe(hash.bytes(key.text, tag: UInt64(bits)))
        while let index = holdingIndex.next(&probe) {
            let holding = holdings[index]
            if holding.keyBits & Holding.keyMask == bits && texts.equals(holding.id, key.text) { return index }
        }
        return nil
    }

    private func hash(of holding: Holding) -> UInt64 {
        let bits = UInt64(holding.keyBits & Holding.keyMask)
        return holding.hasTextID
            ? texts.withText(holding.id) { hash.bytes($0, tag: bits) } : hash.words(bits, holding.id)
    }

    private func hash(of account: AccountRecord) -> UInt64 {
        account.isText
            ? texts.withText(account.high) { hash.bytes($0, tag: 1) } : hash.words(account.high, account.low)
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
        accountIndex.insert(index, hash: hash(of: record)) { hash(of: accounts[$0]) }
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
            if following == 0 {
                accountsHolding -= 1
                forget(account)
            }
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

    /// Erases the id of an account that holds nothing any more (a transfer took its last
    /// subscription, or a deletion unlinked everything): no lookup finds it, and its id is not
    /// left in memory. Linked again, it gets a record of its own.
    private func forget(_ account: Int) {
        var record = accounts[account]
        if record.isText { texts.erase(record.high) } else { record.low = 0 }
        if !record.isText { record.high = 0 }
        record.isForgotten = true
        accounts[account] = record
    }

    /// Writes the periods before the subscription's last one as a chain of period records, over
    /// the records of the chain starting at `reusing` as far as it goes (a longer chain appends
    /// the rest; the tail of a shorter one is left unused), and returns its first index + 1.
    private func writePeriods(_ subscription: WireSubscription, reusing first: UInt32) -> UInt32 {
        let earlierCount = subscription.periodCount - 1
        // Status intervals follow the earlier periods (a subscription without periods is judged
        // by its state alone).
        guard earlierCount > 0 || (subscription.periodCount > 0 && subscription.statusCount > 0) else { return 0 }
        var head: UInt32 = 0
        var previous: UInt32 = 0
        var reuse = first
        var written = 0
        func write(_ record: PeriodRecord) {
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
        subscription.forEachPeriod { period in
            guard written < earlierCount else { return }
            written += 1
            write(
                PeriodRecord(
                    start: period.start, end: period.end, revoked: period.revoked,
                    product: PeriodRecord.product(
                        intern(subscription.store, period.productID, period.basePlanID),
                        offer: PeriodRecord.offerCode(period.offer)),
                    next: 0))
        }
        subscription.forEachStatus { status in
            guard let state = status.state else { return }
            write(
                PeriodRecord(
                    start: status.start, end: status.end, revoked: 0,
                    product: PeriodRecord.statusFlag | UInt32(state.rawValue), next: 0))
        }
        return head
    }

    /// The index + 1 of the subscription's renewal details among the interned profiles (added
    /// when new); 0 when it has none. `expires` is what the holding keeps as its end: a renewal
    /// due then is kept as "at the end", so it does not make the profile its own.
    private func internRenewal(_ subscription: WireSubscription, expires: Int64) -> UInt32 {
        var renewal = subscription.renewal
        let bundle = subscription.bundleOrPackage.flatMap { $0.isEmpty ? nil : WireSubscription.string($0) }
        guard renewal != GrantRenewal() || subscription.renewalOffProductCount > 0 || bundle != nil else { return 0 }
        let atEnd = renewal.renewalTimeMilliseconds != nil && renewal.renewalTimeMilliseconds == Holding.time(expires)
        if atEnd { renewal.renewalTimeMilliseconds = nil }
        var offProducts: [String] = []
        if subscription.renewalOffProductCount > 0 {
            offProducts.reserveCapacity(subscription.renewalOffProductCount)
            subscription.forEachRenewalOffProduct { offProducts.append($0) }
        }
        let profile = RenewalProfile(
            renewal: renewal, dueAtEnd: atEnd, offProducts: offProducts, bundleOrPackage: bundle)
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

    /// The index of the product (store, product id, base plan; UTF-8), added when new.
    private func intern(
        _ store: Store, _ productID: UnsafeBufferPointer<UInt8>, _ basePlanID: UnsafeBufferPointer<UInt8>?
    ) -> UInt32 {
        var probe = productSlots.probe(productHash(store, productID, basePlanID))
        while let index = productSlots.next(&probe) {
            let names = productNames[index]
            guard products[index].store == store, texts.equals(names.productID, productID) else { continue }
            switch (names.basePlanID, basePlanID) {
            case (nil, nil): return UInt32(index)
            case (let stored?, let plan?) where texts.equals(stored, plan): return UInt32(index)
            default: continue
            }
        }
        let product = ViewTables.Product(
            store: store, productID: WireSubscription.string(productID),
            basePlanID: basePlanID.map(WireSubscription.string))
        let index = products.count
        products.append(product)
        productNames.append((texts.store(productID), basePlanID.map { texts.store($0) }))
        productSlots.insert(index, hash: productHash(store, productID, basePlanID)) { entry in
            let names = productNames[entry]
            return texts.withText(names.productID) { id in
                guard let plan = names.basePlanID else { return productHash(products[entry].store, id, nil) }
                return texts.withText(plan) { productHash(products[entry].store, id, $0) }
            }
        }
        return UInt32(index)
    }

    private func productHash(
        _ store: Store, _ productID: UnsafeBufferPointer<UInt8>, _ basePlanID: UnsafeBufferPointer<UInt8>?
    ) -> UInt64 {
        let id = hash.bytes(productID, tag: 2 | UInt64(UInt32(bitPattern: store.rawValue)) << 8)
        return hash.words(id, basePlanID.map { hash.bytes($0, tag: 3) } ?? 0)
    }
}
