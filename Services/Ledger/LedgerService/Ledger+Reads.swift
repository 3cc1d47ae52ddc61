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
            let store = LedgerStore(tx)
            return GetAccountResponse(
                accountID: accountID, subscriptions: try store.subscriptions(of: accountID, limit: Self.maxAccountRows),
                links: try store.links(of: accountID, limit: Self.maxAccountRows))
        }
        guard !found.subscriptions.isEmpty || !found.links.isEmpty else {
            throw LedgerError.notFound("no account \"\(accountID.prefix(Self.maxIDBytes))\" in the ledger")
        }
        return found
    }

    /// The audit trail of an account or a subscription, newest first.
    public func history(_ request: GetHistoryRequest) async throws -> GetHistoryResponse {
        let size = try Self.pageSize(request.pageSize)
        let about: LedgerStore.HistoryFilter
        switch (request.accountID, request.key) {
        case (let account?, nil):
            try Self.check(account, "account_id", max: Self.maxIDBytes)
            about = .account(account)
        case (nil, let key?):
            try Self.check(key, "key")
            about = .subscription(key)
        default:
            throw LedgerError.invalidArgument("exactly one of account_id and key must be set")
        }
        var before: Int64?
        if let token = request.pageToken {
            guard let id = Int64(token), id > 0 else {
                throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
            }
            before = id
        }
        let start = before
        return try await read { tx in
            let rows = try LedgerStore(tx).history(about, before: start, limit: Int(size) + 1)
            let events = try Self.page(min(rows.count, Int(size))) { index in
                (try LedgerStore.decode(LifecycleEvent.self, rows[index].stored), rows[index].stored?.count ?? 0)
            }
            let next = rows.count > events.count ? String(rows[events.count - 1].id) : nil
            return GetHistoryResponse(events: events, nextPageToken: next)
        }
    }

    /// The newest committed change-feed position (0 when there is none).
    public func lastPosition() async throws -> UInt64 {
        try await read { tx in UInt64(try LedgerStore(tx).lastPosition()) }
    }

    /// Committed changes after `position`, in order, at most `limit`.
    public func changes(after position: UInt64, limit: Int) async throws -> [Change] {
        try await read { tx in try LedgerStore(tx).changes(after: position, limit: limit) }
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
        let dialect = database.dialect
        return try await read { tx in
            try LedgerStore(tx).subscriptionChunk(after: after, limit: limit, dialect: dialect)
        }
    }

    /// About how many subscriptions there are, cheaply: SQLite's highest rowid (at least the
    /// count), PostgreSQL's planner estimate (`pg_class.reltuples`, -1 before the first ANALYZE:
    /// then 0).
    public func subscriptionEstimate() async throws -> UInt64 {
        let dialect = database.dialect
        return try await read { tx in try LedgerStore(tx).subscriptionEstimate(dialect: dialect) }
    }

    /// One page of account links in key order after `after`, and the cursor for the next page.
    public func linkPage(after: SnapshotCursor?, limit: Int) async throws -> (
        links: [AccountLink], next: SnapshotCursor?
    ) {
        try await read { tx in try LedgerStore(tx).linkPage(after: after, limit: limit) }
    }
}
