public import Model
public import Wire

/// Reads: subscriptions, accounts, history, the change feed and the snapshot pages.
extension Ledger {
    public func subscription(_ key: SubscriptionKey) async throws -> Subscription {
        try Self.check(key, "key")
        let found = try await read { tx in try LedgerStore(tx).subscriptionRow(key) }
        guard let found else { throw LedgerError.notFound("no subscription \(key)") }
        return found
    }

    /// A subscription's state and, unless `stateOnly`, its latest `maxAnsweredPeriods` recorded
    /// periods, with the raw data, by start.
    public func subscriptionAndPeriods(_ key: SubscriptionKey, stateOnly: Bool = false) async throws
        -> GetSubscriptionResponse
    {
        try Self.check(key, "key")
        let found = try await read { tx in
            try LedgerStore(tx).subscriptionRow(key).map {
                GetSubscriptionResponse(
                    subscription: $0,
                    periods: stateOnly
                        ? [] : try LedgerStore(tx).storedPeriods(key, limit: Self.maxAnsweredPeriods, raw: true)
                )
            }
        }
        guard let found else { throw LedgerError.notFound("no subscription \(key)") }
        return found
    }

    /// An account's subscriptions and links; NOT_FOUND for an account the ledger never saw.
    public func account(_ accountID: String) async throws -> GetAccountResponse {
        try Self.check(accountID, "account_id", max: Self.maxIDBytes)
        let found = try await read { tx in
            let rows = try tx.query(
                "SELECT state FROM subscriptions WHERE account_id = $1 ORDER BY store, environment, store_id LIMIT $2",
                [.text(accountID), .int(Int64(Self.maxAccountRows))])
            let subscriptions = try (0..<rows.count).map {
                try LedgerStore.decode(Subscription.self, rows.blob($0, "state"))
            }
            let linkRows = try tx.query(
                """
                SELECT store, environment, store_id, account_id, store_account_ref, linked_ms FROM links
                WHERE account_id = $1 ORDER BY store, environment, store_id LIMIT $2
                """, [.text(accountID), .int(Int64(Self.maxAccountRows))])
            let links = try (0..<linkRows.count).map { try LedgerStore.link(linkRows, $0) }
            return GetAccountResponse(accountID: accountID, subscriptions: subscriptions, links: links)
        }
        guard !found.subscriptions.isEmpty || !found.links.isEmpty else {
            throw LedgerError.notFound("no account \"\(accountID.prefix(Self.maxIDBytes))\" in the ledger")
        }
        return found
    }

    /// The audit trail of an account or a subscription, newest first.
    public func history(_ request: GetHistoryRequest) async throws -> GetHistoryResponse {
        let size = try Self.pageSize(request.pageSize)
        var filter: String
        var parameters: [SQLValue]
        switch (request.accountID, request.key) {
        case (let account?, nil):
            try Self.check(account, "account_id", max: Self.maxIDBytes)
            filter = "(account_id = $1 OR other_account_id = $1)"
            parameters = [.text(account)]
        case (nil, let key?):
            try Self.check(key, "key")
            filter = "store = $1 AND environment = $2 AND store_id = $3"
            parameters = LedgerStore.keyParameters(key)
        default:
            throw LedgerError.invalidArgument("exactly one of account_id and key must be set")
        }
        if let token = request.pageToken {
            guard let before = Int64(token), before > 0 else {
                throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
            }
            parameters.append(.int(before))
            filter += " AND id < $\(parameters.count)"
        }
        parameters.append(.int(Int64(size) + 1))
        let sql = "SELECT id, event FROM events WHERE \(filter) ORDER BY id DESC LIMIT $\(parameters.count)"
        let query = parameters
        return try await read { tx in
            let rows = try tx.query(sql, query)
            let events = try Self.page(min(rows.count, Int(size))) { index in
                let stored = rows.blob(index, "event")
                return (try LedgerStore.decode(LifecycleEvent.self, stored), stored?.count ?? 0)
            }
            let next = rows.count > events.count ? rows.int(events.count - 1, "id").map(String.init) : nil
            return GetHistoryResponse(events: events, nextPageToken: next)
        }
    }

    /// The newest committed change-feed position (0 when there is none).
    public func lastPosition() async throws -> UInt64 {
        try await read { tx in UInt64(try LedgerStore(tx).lastPosition()) }
    }

    /// Committed changes after `position`, in order, at most `limit`.
    public func changes(after position: UInt64, limit: Int) async throws -> [Change] {
        try await read { tx in
            let rows = try tx.query(
                "SELECT change FROM changes WHERE position > $1 ORDER BY position LIMIT $2",
                [.int(Int64(clamping: position)), .int(Int64(limit))])
            return try (0..<rows.count).map { try LedgerStore.decode(Change.self, rows.blob($0, "change")) }
        }
    }

    /// Where a snapshot page starts: after this subscription key, or (states on SQLite) after
    /// this row.
    public struct SnapshotCursor: Sendable {
        var store: Int64 = 0
        var environment: Int64 = 0
        var storeID = ""
        var rowID: Int64?
    }

    /// One page of stored states after `after`, already as the `subscriptions` field of a
    /// `SnapshotChunk` (each state copied once, from where the engine keeps it, into the chunk),
    /// how many it holds, and the cursor for the next page (nil after the last). On SQLite the
    /// pages follow the table's own order (its rowids), a sequential read of the file; in key
    /// order, each row would be a lookup at a random place in it. On PostgreSQL they follow the
    /// key. Either way every state is in exactly one page.
    ///
    /// A page also ends once its states reach `maxSnapshotChunkBytes`.
    public func subscriptionChunk(after: SnapshotCursor?, limit: Int) async throws -> (
        chunk: [UInt8], count: Int, next: SnapshotCursor?
    ) {
        let byRowID = database.dialect == .sqlite
        return try await read { tx in
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
            var next: SnapshotCursor?
            try tx.scan(sql, parameters) { row in
                // Full (the count, or the bytes: a chunk must fit in a frame however large the
                // states are): the rows after this one are the next page's.
                guard next == nil else { return }
                row.withBytes(3) { out.field(1, bytes: $0) }
                count += 1
                if count == limit || out.bytes.count >= Self.maxSnapshotChunkBytes {
                    next =
                        byRowID
                        ? SnapshotCursor(rowID: row.int(0) ?? 0)
                        : SnapshotCursor(
                            store: row.int(0) ?? 0, environment: row.int(1) ?? 0, storeID: row.text(2) ?? "")
                }
            }
            return (out.bytes, count, next)
        }
    }

    /// About how many subscriptions there are, cheaply: SQLite's highest rowid (at least the
    /// count), PostgreSQL's planner estimate (`pg_class.reltuples`, -1 before the first ANALYZE:
    /// then 0).
    public func subscriptionEstimate() async throws -> UInt64 {
        let sql =
            database.dialect == .sqlite
            ? "SELECT coalesce(max(rowid), 0) AS estimate FROM subscriptions"
            : "SELECT greatest(reltuples, 0)::bigint AS estimate FROM pg_class WHERE oid = 'subscriptions'::regclass"
        return try await read { tx in UInt64(max(0, try tx.query(sql).int(0, "estimate") ?? 0)) }
    }

    /// One page of account links in key order after `after`, and the cursor for the next page.
    public func linkPage(after: SnapshotCursor?, limit: Int) async throws -> (
        links: [AccountLink], next: SnapshotCursor?
    ) {
        try await keyedPage(
            table: "links", columns: "account_id, store_account_ref, linked_ms", after: after, limit: limit
        ) { rows, index in try LedgerStore.link(rows, index) }
    }

    /// Rows of a table keyed by (store, environment, store_id), in key order after `after`.
    func keyedPage<T: Sendable>(
        table: String, columns: String, after: SnapshotCursor?, limit: Int,
        _ row: @escaping @Sendable (SQLRows, Int) throws -> T
    ) async throws -> ([T], SnapshotCursor?) {
        try await read { tx in
            var sql = "SELECT store, environment, store_id, \(columns) FROM \(table)"
            var parameters: [SQLValue] = []
            if let after {
                // A row-value comparison, so both engines walk the primary key from there.
                sql += " WHERE (store, environment, store_id) > ($1, $2, $3)"
                parameters = [.int(after.store), .int(after.environment), .text(after.storeID)]
            }
            parameters.append(.int(Int64(limit)))
            sql += " ORDER BY store, environment, store_id LIMIT $\(parameters.count)"
            let rows = try tx.query(sql, parameters)
            let values = try (0..<rows.count).map { try row(rows, $0) }
            guard limit > 0, rows.count == limit else { return (values, nil) }
            let last = limit - 1
            return (
                values,
                SnapshotCursor(
                    store: rows.int(last, "store") ?? 0, environment: rows.int(last, "environment") ?? 0,
                    storeID: rows.text(last, "store_id") ?? "")
            )
        }
    }
}
