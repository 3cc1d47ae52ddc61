import Model
import Wire

/// The inbox's rows, the subscription listing and the named cursors.
extension LedgerStore {
    /// Puts a notification in the inbox unless its (store, notification id) is there, findable
    /// by its trace id; true when it was put.
    func insertInbox(_ entry: InboxEntry, store: Store) throws -> Bool {
        let inserted = try tx.query(
            """
            INSERT INTO inbox (store, notification_id, status, attempts, last_error, received_ms, entry, trace_id)
            VALUES ($1, $2, $3, 0, $4, $5, $6, $7) ON CONFLICT (store, notification_id) DO NOTHING
            """,
            [
                .int(Int64(store.rawValue)), .text(entry.notificationID),
                .int(Int64((entry.status ?? .pending).rawValue)), .text(entry.lastError),
                .int(entry.receivedTimeMilliseconds ?? 0), .blob(entry.serialized()), .text(entry.traceID),
            ])
        return inserted.affected == 1
    }

    /// The inbox entries recorded under trace `traceID`, in (received, store, id) order, at most
    /// `limit`; by the `inbox_by_trace` index.
    func inboxEntries(traceID: String, limit: Int) throws -> [InboxEntry] {
        let rows = try tx.query(
            """
            SELECT status, attempts, last_error, entry FROM inbox WHERE trace_id = $1
            ORDER BY received_ms, store, notification_id LIMIT $2
            """, [.text(traceID), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.inboxEntry(rows, $0) }
    }

    /// The events recorded under trace `traceID`, in the order they were recorded, at most
    /// `limit`; by the `events_by_trace` index.
    func events(traceID: String, limit: Int) throws -> [LifecycleEvent] {
        let rows = try tx.query(
            "SELECT event FROM events WHERE trace_id = $1 ORDER BY id LIMIT $2", [.text(traceID), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.decode(LifecycleEvent.self, rows.blob($0, "event")) }
    }

    /// Inbox entries in `statuses` (of `store` when given) after `after`, in (received, store,
    /// id) order, at most `limit`.
    func inboxEntries(statuses: [InboxStatus], store: Store?, after: InboxCursor?, limit: Int) throws -> [InboxEntry] {
        var sql =
            "SELECT received_ms, store, notification_id, status, attempts, last_error, entry FROM inbox WHERE status IN ("
        var parameters: [SQLValue] = []
        for status in statuses {
            parameters.append(.int(Int64(status.rawValue)))
            sql += (parameters.count > 1 ? ", " : "") + "$\(parameters.count)"
        }
        sql += ")"
        if let store {
            parameters.append(.int(Int64(store.rawValue)))
            sql += " AND store = $\(parameters.count)"
        }
        if let after {
            parameters += [.int(after.receivedMilliseconds), .int(after.store), .text(after.notificationID)]
            let n = parameters.count
            sql +=
                " AND (received_ms > $\(n - 2) OR (received_ms = $\(n - 2) AND (store > $\(n - 1)"
                + " OR (store = $\(n - 1) AND notification_id > $\(n)))))"
        }
        parameters.append(.int(Int64(limit)))
        sql += " ORDER BY received_ms, store, notification_id LIMIT $\(parameters.count)"
        let rows = try tx.query(sql, parameters)
        return try (0..<rows.count).map { try Self.inboxEntry(rows, $0) }
    }

    /// One store's subscriptions by state and expiry window (with `unacknowledged`, only the
    /// Google purchases still to acknowledge) after `after` (environment, store id), in that
    /// order, at most `limit`, each with its stored size.
    func subscriptions(
        store: Store, state: SubscriptionState?, expiresFrom: Int64?, expiresBefore: Int64?,
        unacknowledged: Bool = false, after: PairCursor?, limit: Int
    ) throws -> [(subscription: Subscription, bytes: Int)] {
        var sql = "SELECT state FROM subscriptions WHERE store = $1"
        var parameters: [SQLValue] = [.int(Int64(store.rawValue))]
        if unacknowledged { sql += " AND unacknowledged = 1" }
        func add(_ condition: String, _ value: SQLValue) {
            parameters.append(value)
            sql += " AND \(condition) $\(parameters.count)"
        }
        if let state { add("state_code =", .int(Int64(state.rawValue))) }
        if let expiresFrom { add("expires_ms >=", .int(expiresFrom)) }
        if let expiresBefore { add("expires_ms <", .int(expiresBefore)) }
        if let after {
            parameters += [.int(after.number), .text(after.text)]
            let n = parameters.count
            sql += " AND (environment > $\(n - 1) OR (environment = $\(n - 1) AND store_id > $\(n)))"
        }
        parameters.append(.int(Int64(limit)))
        sql += " ORDER BY environment, store_id LIMIT $\(parameters.count)"
        let rows = try tx.query(sql, parameters)
        return try (0..<rows.count).map { index in
            let stored = rows.blob(index, "state")
            return (try Self.decode(Subscription.self, stored), stored?.count ?? 0)
        }
    }

    // MARK: Cursors

    /// Moves cursor `name` up to `value` (created there when missing); a lower value leaves it.
    func raiseCursor(_ name: String, to value: Int64, at: Int64) throws {
        try tx.query(
            """
            INSERT INTO cursors (name, value, updated_ms) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_ms = excluded.updated_ms
            WHERE cursors.value < excluded.value
            """, [.text(name), .int(value), .int(at)])
    }

    /// Cursor `name` as stored, nil when it was never set.
    func storedCursor(_ name: String) throws -> Cursor? {
        let rows = try tx.query("SELECT value, updated_ms FROM cursors WHERE name = $1", [.text(name)])
        guard !rows.isEmpty else { return nil }
        return Cursor(name: name, value: rows.int(0, "value") ?? 0, updatedTimeMilliseconds: rows.int(0, "updated_ms"))
    }

    /// Cursor `name` as stored (value 0 when never set).
    func cursor(_ name: String) throws -> Cursor { try storedCursor(name) ?? Cursor(name: name) }

    /// Creates cursor `name` at `value`.
    func insertCursor(_ name: String, value: Int64, at: Int64) throws {
        try tx.query(
            "INSERT INTO cursors (name, value, updated_ms) VALUES ($1, $2, $3)", [.text(name), .int(value), .int(at)])
    }
}

extension LedgerStore {
    /// The stored App Store states with recorded periods after `after` (environment, store
    /// id), in that order, at most `limit`: each as stored, with its place as a cursor.
    func applePeriodStates(after: PairCursor?, limit: Int) throws -> [(stored: [UInt8]?, cursor: PairCursor)] {
        var sql = """
            SELECT environment, store_id, state FROM subscriptions s WHERE store = $1 AND EXISTS (
                SELECT 1 FROM periods p WHERE p.store = s.store AND p.environment = s.environment AND p.store_id = s.store_id)
            """
        var parameters: [SQLValue] = [.int(Int64(Store.apple.rawValue))]
        if let after {
            parameters += [.int(after.number), .text(after.text)]
            sql += " AND (environment > $2 OR (environment = $2 AND store_id > $3))"
        }
        parameters.append(.int(Int64(limit)))
        sql += " ORDER BY environment, store_id LIMIT $\(parameters.count)"
        let rows = try tx.query(sql, parameters)
        return (0..<rows.count).map {
            (
                rows.blob($0, "state"),
                PairCursor(number: rows.int($0, "environment") ?? 0, text: rows.text($0, "store_id") ?? "")
            )
        }
    }
}
