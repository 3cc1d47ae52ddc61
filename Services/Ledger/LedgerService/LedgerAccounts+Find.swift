import Model
public import Wire

extension LedgerAccounts {
    /// `FindSubscriptions`: the subscriptions and grants `value` names, each once, in this order:
    /// those whose store id it is (found as the key), those with a period the store shows by it
    /// (an Apple transaction id, a Google order id; a Google renewal's order id the ledger has
    /// not recorded is looked up by its base order id), then an account's. Every read is by an
    /// index; at most `Ledger.maxAccountRows` matches.
    public func findSubscriptions(_ request: FindSubscriptionsRequest) async throws -> FindSubscriptionsResponse {
        try Ledger.check(request.value, FindSubscriptionsRequest.Limits.value)
        let value = request.value
        let limit = Ledger.maxAccountRows
        return try await transactions.read { tx in
            let store = LedgerStore(tx)
            var response = FindSubscriptionsResponse()
            var seen = Set<SubscriptionKey>()
            func add(_ found: [LedgerStore.FoundKey], _ matched: (Store) -> FindMatch?) {
                for row in found where response.matches.count < limit && seen.insert(row.key).inserted {
                    response.matches.append(
                        SubscriptionMatch(key: row.key, accountID: row.accountID, matched: matched(row.key.store)))
                }
            }
            add(try store.subscriptions(storeID: value, limit: limit), Self.keyMatch)
            var periods = try store.subscriptions(periodLookupID: value, limit: limit)
            let base = LedgerStore.baseOrderID(value)
            if periods.isEmpty, base != value {
                periods = try store.subscriptions(periodLookupID: base, limit: limit)
            }
            add(periods, Self.periodMatch)
            let held = try store.subscriptions(of: value, limit: limit)
            let links = try store.links(of: value, limit: limit)
            add(held.map { LedgerStore.FoundKey(key: $0.key, accountID: $0.accountID) }) { _ in .accountID }
            add(links.map { LedgerStore.FoundKey(key: $0.key, accountID: $0.accountID) }) { _ in .accountID }
            let hasHistory = try store.accountHasHistory(value)
            if !held.isEmpty || !links.isEmpty || hasHistory {
                response.accountID = value
            }
            return response
        }
    }

    /// What a value that is a key's store id is, by the key's store.
    static func keyMatch(_ store: Store) -> FindMatch? {
        switch store {
        case .apple: .appleOriginalTransactionID
        case .google: .googlePurchaseToken
        case .promotional: .grantID
        }
    }

    /// What a value that is a period's id is, by the key's store.
    static func periodMatch(_ store: Store) -> FindMatch? {
        store == .google ? .googleOrderID : .appleTransactionID
    }
}
