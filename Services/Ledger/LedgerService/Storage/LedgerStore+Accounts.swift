import Model
import Wire

/// What an account holds, and a deleted account's redaction across the stored rows.
extension LedgerStore {
    /// What an account holds: its links, and any subscription that names it without one.
    func holdings(of account: String) throws -> [(
        key: SubscriptionKey, storeAccountRef: String?
    )] {
        let links = try tx.query(
            """
            SELECT store, environment, store_id, account_id, store_account_ref, linked_ms FROM links
            WHERE account_id = $1 ORDER BY store, environment, store_id
            """, [.text(account)])
        var held = try (0..<links.count).map { index in
            let link = try Self.link(links, index)
            return (key: link.key, storeAccountRef: link.storeAccountRef)
        }
        let linked = Set(held.map(\.key))
        let rows = try tx.query(
            "SELECT state FROM subscriptions WHERE account_id = $1 ORDER BY store, environment, store_id",
            [.text(account)])
        for index in 0..<rows.count {
            let subscription = try Self.decode(Subscription.self, rows.blob(index, "state"))
            if !linked.contains(subscription.key) {
                held.append((subscription.key, subscription.storeAccountRef))
            }
        }
        return held
    }

    /// The ids of the accounts merged into `account`, and into those, and so on.
    func mergedAliases(of account: String) throws -> Set<String> {
        var found: Set<String> = []
        var pending = [account]
        while let next = pending.popLast() {
            let rows = try tx.query(
                "SELECT event FROM events WHERE account_id = $1 AND other_account_id IS NOT NULL", [.text(next)])
            for index in 0..<rows.count {
                let event = try Self.decode(LifecycleEvent.self, rows.blob(index, "event"))
                guard event.kind == .accountMerged, let from = event.otherAccountID, from != account,
                    found.insert(from).inserted
                else { continue }
                pending.append(from)
            }
        }
        return found
    }

    /// Rewrites the events of the account and of `keys` (their raw data dropped), the periods'
    /// raw data of `keys`, and the raw payloads of the inbox entries those events came from.
    /// Returns the rows rewritten.
    func redactEvents(_ redaction: LedgerAccounts.Redaction, keys: [SubscriptionKey]) throws
        -> Int
    {
        var rows: [(id: Int64, event: LifecycleEvent)] = []
        var seen = Set<Int64>()
        func collect(_ result: SQLRows) throws {
            for index in 0..<result.count {
                guard let id = result.int(index, "id"), seen.insert(id).inserted else { continue }
                rows.append((id, try Self.decode(LifecycleEvent.self, result.blob(index, "event"))))
            }
        }
        for name in redaction.names.sorted() {
            try collect(
                tx.query("SELECT id, event FROM events WHERE account_id = $1 OR other_account_id = $1", [.text(name)]))
        }
        for key in keys {
            try collect(
                tx.query(
                    "SELECT id, event FROM events WHERE store = $1 AND environment = $2 AND store_id = $3",
                    Self.keyParameters(key)))
        }
        let keySet = Set(keys)
        var notifications = Set<String>()
        for (id, event) in rows {
            let fromKey = keySet.contains(event.key)
            if fromKey, let notification = event.notificationID { notifications.insert(notification) }
            let clean = redaction.event(event, dropRaw: fromKey)
            try tx.enqueue(
                "UPDATE events SET account_id = $1, other_account_id = $2, event = $3 WHERE id = $4",
                [.text(clean.accountID), .text(clean.otherAccountID), .blob(clean.serialized()), .int(id)])
        }
        var count = rows.count
        for key in keys {
            let update = try tx.query(
                "UPDATE periods SET raw = NULL WHERE store = $1 AND environment = $2 AND store_id = $3 AND raw IS NOT NULL",
                Self.keyParameters(key))
            count += update.affected
        }
        for notification in notifications.sorted() {
            let stored = try tx.query(
                "SELECT store, status, attempts, last_error, entry FROM inbox WHERE notification_id = $1",
                [.text(notification)])
            for index in 0..<stored.count {
                guard let store = stored.int(index, "store").flatMap({ Store(rawValue: Int32($0)) }) else { continue }
                var entry = try Self.inboxEntry(stored, index)
                entry.rawPayload = ""
                entry.lastError = redaction.text(entry.lastError)
                try saveInbox(entry, store: store)
                count += 1
            }
        }
        return count
    }

    /// The condition, in `dialect`, that `column` (a blob) holds one of `needles`, with the
    /// parameters it binds from `$1`.
    static func containsAny(_ column: String, _ needles: [[UInt8]], dialect: SQLDialect) -> (String, [SQLValue]) {
        let terms = needles.indices.map { index in
            dialect == .sqlite ? "instr(\(column), $\(index + 1)) > 0" : "position($\(index + 1) in \(column)) > 0"
        }
        return (terms.joined(separator: " OR "), needles.map { .blob($0) })
    }

    /// Rewrites the stored changes whose bytes hold the account id or a reference: their
    /// subscription, link and events without them. Returns the changes rewritten.
    func redactChanges(_ redaction: LedgerAccounts.Redaction, dialect: SQLDialect) throws -> Int {
        let (condition, parameters) = Self.containsAny("change", redaction.needles, dialect: dialect)
        let rows = try tx.query("SELECT position, change FROM changes WHERE \(condition)", parameters)
        var count = 0
        for index in 0..<rows.count {
            guard let position = rows.int(index, "position") else { continue }
            let change = try Self.decode(Change.self, rows.blob(index, "change"))
            var clean = change
            clean.subscription = change.subscription.map(redaction.subscription)
            if var link = change.link {
                link.accountID = redaction.field(link.accountID) ?? ""
                link.storeAccountRef = redaction.field(link.storeAccountRef)
                clean.link = link
            }
            clean.events = change.events.map { redaction.event($0, dropRaw: false) }
            // Bytes that only looked like the id (a longer id that contains it) stay as they are.
            guard clean != change else { continue }
            try tx.enqueue(
                "UPDATE changes SET change = $1 WHERE position = $2", [.blob(clean.serialized()), .int(position)])
            count += 1
        }
        return count
    }

    /// Rewrites the logged events that name the account or a reference, and forgets the access
    /// announced to it. Returns the entries rewritten or removed.
    func redactEventLog(_ redaction: LedgerAccounts.Redaction, dialect: SQLDialect) throws -> Int {
        var count = 0
        for name in redaction.names.sorted() {
            count += try tx.query("DELETE FROM access_state WHERE account_id = $1", [.text(name)]).affected
        }
        let (condition, parameters) = Self.containsAny("event", redaction.needles, dialect: dialect)
        let rows = try tx.query("SELECT seq, event FROM event_log WHERE \(condition)", parameters)
        for index in 0..<rows.count {
            guard let sequence = rows.int(index, "seq") else { continue }
            let event = try Self.decode(Event.self, rows.blob(index, "event"))
            var clean = event
            clean.accountID = redaction.field(event.accountID)
            clean.otherAccountID = redaction.field(event.otherAccountID)
            clean.subscription = event.subscription.map(redaction.subscription)
            guard clean != event else { continue }
            try tx.enqueue(
                "UPDATE event_log SET account_id = $1, event = $2 WHERE seq = $3",
                [.text(clean.accountID), .blob(clean.serialized()), .int(sequence)])
            count += 1
        }
        return count
    }

    /// Empties the stored answers that hold the account id or a reference; their keys stay, so
    /// that a retry is refused (`replayed`) rather than run again. Returns the records emptied.
    func redactIdempotency(_ redaction: LedgerAccounts.Redaction, dialect: SQLDialect) throws
        -> Int
    {
        let (condition, parameters) = Self.containsAny("response", redaction.needles, dialect: dialect)
        let update = try tx.query(
            """
            UPDATE idempotency SET request_hash = '\(Ledger.deletedRecordPrefix)' || request_hash, response = $\(parameters.count + 1)
            WHERE (\(condition)) AND request_hash NOT LIKE '\(Ledger.deletedRecordPrefix)%'
            """, parameters + [.blob([])])
        return update.affected
    }

    /// Links a subscription to an account, in place of any link it had.
    func saveLink(_ link: AccountLink) throws {
        try tx.enqueue(
            """
            INSERT INTO links (store, environment, store_id, account_id, store_account_ref, linked_ms)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (store, environment, store_id) DO UPDATE SET account_id = $4, store_account_ref = $5, linked_ms = $6
            """,
            Self.keyParameters(link.key) + [
                .text(link.accountID), .text(link.storeAccountRef), .int(link.linkedTimeMilliseconds ?? 0),
            ])
    }

    func deleteLink(_ key: SubscriptionKey) throws {
        try tx.enqueue(
            "DELETE FROM links WHERE store = $1 AND environment = $2 AND store_id = $3", Self.keyParameters(key))
    }
}
