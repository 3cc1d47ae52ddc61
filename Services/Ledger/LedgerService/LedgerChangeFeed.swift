public import Model
public import Wire

/// The change feed and the snapshot pages: what readers of the ledger (the entitlement view) follow.
public struct LedgerChangeFeed: Sendable {
    let transactions: LedgerTransactions
}

extension LedgerChangeFeed {
    /// The newest committed change-feed position (0 when there is none).
    public func lastPosition() async throws -> UInt64 {
        try await transactions.read { tx in UInt64(try LedgerStore(tx).lastPosition()) }
    }

    /// Committed changes after `position`, in order, at most `limit`.
    public func changes(after position: UInt64, limit: Int) async throws -> [Change] {
        try await transactions.read { tx in try LedgerStore(tx).changes(after: position, limit: limit) }
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
        let dialect = transactions.database.dialect
        return try await transactions.read { tx in
            try LedgerStore(tx).subscriptionChunk(after: after, limit: limit, dialect: dialect)
        }
    }

    /// Every stored state, in the pages `subscriptionChunk` reads (each a `SnapshotChunk`'s
    /// `subscriptions` field, at most `limit` states), handed to `send` in order; the next page
    /// is read while `send` sends one. On SQLite the pages further ahead are read into the page
    /// cache meanwhile, several at once (`SQLiteReadAhead`): a cold scan then waits on the disk
    /// for many reads together rather than for each in turn. Returns how many states it sent.
    @discardableResult
    public func sendSubscriptionChunks(limit: Int, _ send: ([UInt8]) async throws -> Void) async throws -> Int {
        var readAhead: SQLiteReadAhead?
        if let sqlite = transactions.database as? SQLiteLedgerDatabase {
            let highest = Int64(clamping: try await subscriptionEstimate())
            // One page or less reads at once anyway.
            if highest > limit {
                readAhead = SQLiteReadAhead(path: sqlite.path, table: "subscriptions", after: 0, through: highest)
            }
        }
        defer { readAhead?.stop() }
        readAhead?.advance(to: 0)
        var sent = 0
        var page = try await subscriptionChunk(after: nil, limit: limit)
        while true {
            if let rowID = page.next?.rowID { readAhead?.advance(to: rowID) }
            guard let next = page.next else {
                if page.count > 0 { try await send(page.chunk) }
                return sent + page.count
            }
            async let following = subscriptionChunk(after: next, limit: limit)
            if page.count > 0 { try await send(page.chunk) }
            sent += page.count
            page = try await following
        }
    }

    /// About how many subscriptions there are, cheaply: SQLite's highest rowid (at least the
    /// count), PostgreSQL's planner estimate (`pg_class.reltuples`, -1 before the first ANALYZE:
    /// then 0).
    public func subscriptionEstimate() async throws -> UInt64 {
        let dialect = transactions.database.dialect
        return try await transactions.read { tx in try LedgerStore(tx).subscriptionEstimate(dialect: dialect) }
    }

    /// One page of account links in key order after `after`, and the cursor for the next page.
    public func linkPage(after: SnapshotCursor?, limit: Int) async throws -> (
        links: [AccountLink], next: SnapshotCursor?
    ) {
        try await transactions.read { tx in try LedgerStore(tx).linkPage(after: after, limit: limit) }
    }
}
