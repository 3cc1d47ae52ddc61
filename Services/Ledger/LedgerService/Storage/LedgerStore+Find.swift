import Model
import Wire

/// The reads behind `FindSubscriptions`: a value as a key's store id, as a period's id the
/// store shows (`period_lookup`), and as an account; each by an index.
extension LedgerStore {
    /// The ids a period is found by: an Apple period's transaction id; a Google period's order
    /// id (its id is `order/product`) and, for a renewal's order (`GPA.….N` with `..N`), the
    /// base order id the subscription was bought with.
    static func lookupIDs(store: Store, periodID: String) -> [String] {
        switch store {
        case .apple: return [periodID]
        case .google:
            let order = String(periodID.split(separator: "/", maxSplits: 1).first ?? "")
            guard !order.isEmpty else { return [] }
            let base = baseOrderID(order)
            return base == order ? [order] : [order, base]
        case .promotional: return []
        }
    }

    /// A Google order id without a renewal's `..N` suffix (itself when it has none).
    static func baseOrderID(_ order: String) -> String {
        let bytes = Array(order.utf8)
        var digits = bytes.count
        while digits > 0, (0x30...0x39).contains(bytes[digits - 1]) { digits -= 1 }
        guard digits < bytes.count, digits >= 3, bytes[digits - 1] == 0x2E, bytes[digits - 2] == 0x2E else {
            return order
        }
        return String(decoding: bytes[..<(digits - 2)], as: UTF8.self)
    }

    /// One row that names the value: the subscription's key and linked account.
    struct FoundKey {
        let key: SubscriptionKey
        let accountID: String?
    }

    /// The subscriptions whose store id is `value`.
    func subscriptions(storeID value: String, limit: Int) throws -> [FoundKey] {
        try foundKeys(
            "SELECT store, environment, store_id, account_id FROM subscriptions WHERE store_id = $1 LIMIT $2",
            [.text(value), .int(Int64(limit))])
    }

    /// The subscriptions with a period the store shows as `value`.
    func subscriptions(periodLookupID value: String, limit: Int) throws -> [FoundKey] {
        try foundKeys(
            """
            SELECT l.store, l.environment, l.store_id, s.account_id FROM period_lookup l
            LEFT JOIN subscriptions s ON s.store = l.store AND s.environment = l.environment AND s.store_id = l.store_id
            WHERE l.lookup_id = $1 ORDER BY l.store, l.environment, l.store_id LIMIT $2
            """, [.text(value), .int(Int64(limit))])
    }

    /// Whether the ledger's history names `account` (an account whose holdings have gone).
    func accountHasHistory(_ account: String) throws -> Bool {
        !(try tx.query("SELECT id FROM events WHERE account_id = $1 LIMIT 1", [.text(account)]).isEmpty)
    }

    private func foundKeys(_ sql: String, _ parameters: [SQLValue]) throws -> [FoundKey] {
        let rows = try tx.query(sql, parameters)
        return try (0..<rows.count).map { index in
            guard let store = rows.int(index, "store").flatMap({ Store(rawValue: Int32($0)) }),
                let environment = rows.int(index, "environment").flatMap({ StoreEnvironment(rawValue: Int32($0)) }),
                let storeID = rows.text(index, "store_id")
            else { throw LedgerStorageError.corrupt("lookup row \(index)") }
            return FoundKey(
                key: SubscriptionKey(store: store, environment: environment, storeID: storeID),
                accountID: rows.text(index, "account_id"))
        }
    }
}
