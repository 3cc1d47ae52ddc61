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
