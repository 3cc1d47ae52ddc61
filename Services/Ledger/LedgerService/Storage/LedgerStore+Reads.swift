import Model
import Wire

/// The reads behind the ledger's queries: accounts, history, the change feed, snapshot pages.
extension LedgerStore {
    /// The subscriptions that name `account`, by key, at most `limit`.
    func subscriptions(of account: String, limit: Int) throws -> [Subscription] {
        let rows = try tx.query(
            "SELECT state FROM subscriptions WHERE account_id = $1 ORDER BY store, environment, store_id LIMIT $2",
            [.text(account), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.decode(Subscription.self, rows.blob($0, "state")) }
    }

    /// The links of `account`, by key, at most `limit`.
    func links(of account: String, limit: Int) throws -> [AccountLink] {
        let rows = try tx.query(
            """
            SELECT store, environment, store_id, account_id, store_account_ref, linked_ms FROM links
            WHERE account_id = $1 ORDER BY store, environment, store_id LIMIT $2
            """, [.text(account), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.link(rows, $0) }
    }

    /// Whose history: an account's (naming it as either account) or a subscription's.
    enum HistoryFilter {
        case account(String)
        case subscription(SubscriptionKey)
    }

    /// Events of the history, newest first, before event id `before` when given, at most
    /// `limit`: each one's id and stored event.
    func history(_ about: HistoryFilter, before: Int64?, limit: Int) throws -> [(id: Int64, stored: [UInt8]?)] {
        var filter: String
        var parameters: [SQLValue]
        switch about {
        case .account(let account):
            filter = "(account_id = $1 OR other_account_id = $1)"
            parameters = [.text(account)]
        case .subscription(let key):
            filter = "store = $1 AND environment = $2 AND store_id = $3"
            parameters = Self.keyParameters(key)
        }
        if let before {
            parameters.append(.int(before))
            filter += " AND id < $\(parameters.count)"
        }
        parameters.append(.int(Int64(limit)))
        let rows = try tx.query(
            "SELECT id, event FROM events WHERE \(filter) ORDER BY id DESC LIMIT $\(parameters.count)", parameters)
        return (0..<rows.count).map { (rows.int($0, "id") ?? 0, rows.blob($0, "event")) }
    }

    /// Committed changes after `position`, in order, at most `limit`.
    func changes(after position: UInt64, limit: Int) throws -> [Change] {
        let rows = try tx.query(
            "SELECT change FROM changes WHERE position > $1 ORDER BY position LIMIT $2",
            [.int(Int64(clamping: position)), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.decode(Change.self, rows.blob($0, "change")) }
    }

    /// See `Ledger.subscriptionChunk`: on SQLite the pages follow the table's rowids, on
    /// PostgreSQL the key.
    func subscriptionChunk(after: LedgerChangeFeed.SnapshotCursor?, limit: Int, dialect: SQLDialect) throws -> (
        chunk: [UInt8], count: Int, next: LedgerChangeFeed.SnapshotCursor?
    ) {
        let byRowID = dialect == .sqlite
        var sql: String
        var parameters: [SQLValue] = []
        if byRowID {
            sql = "SELECT rowid, 0, NULL, state FROM subscriptions WHERE rowid > $1 ORDER BY rowid LIMIT $2"
            parameters = [.int(after?.rowID ?? 0)]
        } else {
            sql = "SELECT store, environment, store_id, state FROM subscriptions"
            if let after {
                sql += " WHERE (store, environment, store_id) > ($1, $2, $3)"
                parameters = [.int(after.store), .int(after.environment), .text(after.storeID)]
            }
            sql += " ORDER BY store, environment, store_id LIMIT $\(parameters.count + 1)"
        }
        parameters.append(.int(Int64(limit)))
        var out = ProtoWireWriter(capacity: limit * 512)
        var count = 0
        var next: LedgerChangeFeed.SnapshotCursor?
        try tx.scan(sql, parameters) { row in
            // Full (the count, or the bytes: a chunk must fit in a frame however large the
            // states are): the rows after this one are the next page's.
            guard next == nil else { return }
            row.withBytes(3) { out.field(1, bytes: $0) }
            count += 1
            if count == limit || out.bytes.count >= Ledger.maxSnapshotChunkBytes {
                next =
                    byRowID
                    ? LedgerChangeFeed.SnapshotCursor(rowID: row.int(0) ?? 0)
                    : LedgerChangeFeed.SnapshotCursor(
                        store: row.int(0) ?? 0, environment: row.int(1) ?? 0, storeID: row.text(2) ?? "")
            }
        }
        return (out.bytes, count, next)
    }

    /// About how many subscriptions there are, cheaply: SQLite's highest rowid (at least the
    /// count), PostgreSQL's planner estimate (`pg_class.reltuples`, -1 before the first ANALYZE:
    /// then 0).
    func subscriptionEstimate(dialect: SQLDialect) throws -> UInt64 {
        let sql =
            dialect == .sqlite
            ? "SELECT coalesce(max(rowid), 0) AS estimate FROM subscriptions"
            : "SELECT greatest(reltuples, 0)::bigint AS estimate FROM pg_class WHERE oid = 'subscriptions'::regclass"
        return UInt64(max(0, try tx.query(sql).int(0, "estimate") ?? 0))
    }

    /// One page of account links in key order after `after`, and the cursor for the next page.
    func linkPage(after: LedgerChangeFeed.SnapshotCursor?, limit: Int) throws -> (
        links: [AccountLink], next: LedgerChangeFeed.SnapshotCursor?
    ) {
        var sql = "SELECT store, environment, store_id, account_id, store_account_ref, linked_ms FROM links"
        var parameters: [SQLValue] = []
        if let after {
            // A row-value comparison, so both engines walk the primary key from there.
            sql += " WHERE (store, environment, store_id) > ($1, $2, $3)"
            parameters = [.int(after.store), .int(after.environment), .text(after.storeID)]
        }
        parameters.append(.int(Int64(limit)))
        sql += " ORDER BY store, environment, store_id LIMIT $\(parameters.count)"
        let rows = try tx.query(sql, parameters)
        let links = try (0..<rows.count).map { try Self.link(rows, $0) }
        guard limit > 0, rows.count == limit else { return (links, nil) }
        let last = limit - 1
        return (
            links,
            LedgerChangeFeed.SnapshotCursor(
                store: rows.int(last, "store") ?? 0, environment: rows.int(last, "environment") ?? 0,
                storeID: rows.text(last, "store_id") ?? "")
        )
    }
}
