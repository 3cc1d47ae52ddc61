import Foundation
import Model
import Wire

/// The rows behind the rules: positions, changes, states, periods, events, links, inbox entries and idempotency records.
extension Ledger {
    static func keyParameters(_ key: SubscriptionKey) -> [SQLValue] {
        [.int(Int64(key.store.rawValue)), .int(Int64(key.environment.rawValue)), .text(key.storeID)]
    }

    /// The next change-feed position. Write transactions run one at a time (SQLite's single
    /// writer; on PostgreSQL the advisory lock every write batch takes first and holds until
    /// it commits), so positions become visible in order: a reader that has seen position n
    /// never later finds n − 1.
    static func nextPosition(_ tx: any LedgerTransaction) throws -> UInt64 {
        let next = try tx.batch.lastPosition.map { $0 + 1 } ?? UInt64(try lastPosition(tx) + 1)
        tx.batch.lastPosition = next
        return next
    }

    static func lastPosition(_ tx: any LedgerTransaction) throws -> Int64 {
        try tx.query("SELECT COALESCE(MAX(position), 0) AS position FROM changes").int(0, "position") ?? 0
    }

    static func appendChange(_ tx: any LedgerTransaction, _ change: Change) throws {
        try tx.enqueue(
            "INSERT INTO changes (position, committed_ms, change) VALUES ($1, $2, $3)",
            [.int(Int64(change.position)), .int(change.committedTimeMilliseconds ?? 0), .blob(change.serialized())])
    }

    /// Stores `state` as a change of its own (no events), at the next position.
    static func saveStateChange(_ tx: any LedgerTransaction, _ state: Subscription, at: Int64) throws {
        let position = try nextPosition(tx)
        try saveSubscription(tx, state, position: position)
        try appendChange(
            tx, Change(position: position, committedTimeMilliseconds: at, kind: .subscription, subscription: state))
    }

    static func subscriptionRow(_ tx: any LedgerTransaction, _ key: SubscriptionKey) throws -> Subscription? {
        let rows = try tx.query(
            "SELECT state FROM subscriptions WHERE store = $1 AND environment = $2 AND store_id = $3",
            keyParameters(key))
        return rows.isEmpty ? nil : try decode(Subscription.self, rows.blob(0, "state"))
    }

    static func saveSubscription(_ tx: any LedgerTransaction, _ subscription: Subscription, position: UInt64) throws {
        try tx.enqueue(
            """
            INSERT INTO subscriptions
                (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (store, environment, store_id) DO UPDATE
            SET account_id = $4, store_time_ms = $5, position = $6, state = $7, state_code = $8, expires_ms = $9
            """,
            keyParameters(subscription.key) + [
                .text(subscription.accountID), .int(subscription.storeTimeMilliseconds), .int(Int64(position)),
                .blob(subscription.serialized()), .int(subscription.state.map { Int64($0.rawValue) }),
                .int(subscription.expiresTimeMilliseconds),
            ])
    }

    /// Records each period unless the stored version of it stands (`Period.standing`). Returns
    /// every period of the subscription afterwards when any row changed, nil when none did.
    static func recordPeriods(_ tx: any LedgerTransaction, _ key: SubscriptionKey, _ periods: [Period]) throws
        -> [Period]?
    {
        guard !periods.isEmpty else { return nil }
        // Apple signs each version, so one stands; Google's versions are partial views of one
        // order and are combined.
        let google = key.store == .google
        func merge(_ a: Period, _ b: Period) -> Period { google ? Period.combined(a, b) : Period.standing(a, b) }
        var incoming: [String: Period] = [:]
        for period in periods {
            incoming[period.periodID] = incoming[period.periodID].map { merge($0, period) } ?? period
        }
        var stored: [String: Period] = [:]
        for period in try storedPeriods(tx, key) { stored[period.periodID] = period }
        var changed = false
        for (id, arriving) in incoming.sorted(by: { $0.key < $1.key }) {
            var period = arriving
            if let existing = stored[id] {
                let result = merge(existing, arriving)
                guard result.contentHash != existing.contentHash else { continue }
                // Stored versions are read without raw data: where the one that stands brings
                // none, the stored raw data stays.
                period = result
            }
            changed = true
            stored[id] = period
            var bare = period
            bare.raw = nil
            try tx.enqueue(
                """
                INSERT INTO periods (store, environment, store_id, period_id, start_ms, period, raw)
                VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (store, environment, store_id, period_id)
                DO UPDATE SET start_ms = $5, period = $6, raw = COALESCE($7, periods.raw)
                """,
                keyParameters(key) + [
                    .text(id), .int(period.startMilliseconds), .blob(bare.serialized()), .text(period.raw),
                ])
        }
        return changed ? Array(stored.values) : nil
    }

    /// Where a Google replacement that became real (an upgrade, downgrade or re-signup whose
    /// state is no longer pending) moves access from the replaced token to the new one, from
    /// the new token's recorded `periods`: an immediate change ends the replaced token's access
    /// where the new token's paid time starts as access reads it (its renewals continue its
    /// first order, which a deferred change started where the replaced token's paid time ended:
    /// a later read of a deferred change's token cuts nothing; Play also expires the replaced
    /// token, but that notification may come late or never); a `deferred` one starts the new
    /// token's paid time where the replaced one's ends. Returns both tokens' recorded periods
    /// where they changed.
    static func replacement(
        _ tx: any LedgerTransaction, _ key: SubscriptionKey, _ periods: [Period],
        replacing replacedKey: SubscriptionKey,
        deferred: Bool
    ) throws -> (new: [Period], replaced: [Period]?) {
        guard try subscriptionRow(tx, replacedKey) != nil,
            let start = Period.googleAccessPeriods(periods).map(\.startMilliseconds).min()
        else { return (periods, nil) }
        let old = try storedPeriods(tx, replacedKey)
        if !deferred {
            let cuts = old.filter { ($0.paidEnd ?? Int64.max) > start }.map { period -> Period in
                var cut = period
                cut.stoppedTimeMilliseconds = max(start, period.startMilliseconds)
                return cut
            }
            return (periods, try recordPeriods(tx, replacedKey, cuts))
        }
        guard let oldEnd = old.filter({ $0.revokedTimeMilliseconds == nil }).compactMap(\.paidEnd).max(), oldEnd > start
        else { return (periods, nil) }
        let shifted = periods.filter { $0.startMilliseconds < oldEnd }.map { period -> Period in
            var moved = period
            moved.startMilliseconds = min(oldEnd, period.paidEnd ?? oldEnd)
            return moved
        }
        return (try recordPeriods(tx, key, shifted) ?? periods, nil)
    }

    /// The periods recorded for `key`, by start (at most `limit`, the latest); with `raw`, each
    /// with the signed data it came from.
    static func storedPeriods(
        _ tx: any LedgerTransaction, _ key: SubscriptionKey, limit: Int = maxStoredPeriodRows, raw: Bool = false
    ) throws -> [Period] {
        let rows = try tx.query(
            """
            SELECT period\(raw ? ", raw" : "") FROM periods WHERE store = $1 AND environment = $2 AND store_id = $3
            ORDER BY start_ms DESC, period_id DESC LIMIT $4
            """, keyParameters(key) + [.int(Int64(limit))])
        return try (0..<rows.count).reversed().map { index in
            var period = try decode(Period.self, rows.blob(index, "period"))
            if raw { period.raw = rows.text(index, "raw") }
            return period
        }
    }

    /// `periods` of `key` as access reads them (`Period.accessPeriods`), the latest `maxPeriods`.
    /// In an Apple family-shared chain a revocation made before its period ended is the end of
    /// the sharing (REVOKE): it also ends the chain's periods that run past it.
    static func accessPeriods(_ periods: [Period], of key: SubscriptionKey, ownership: Ownership?) -> [Period] {
        let access =
            key.store == .google
            ? Period.googleAccessPeriods(periods)
            : Period.accessPeriods(
                periods, clipsAtNextStart: true, revocationEndsChain: ownership == .familyShared)
        return Array(access.suffix(maxPeriods))
    }

    /// Records `state` as a fact of its subscription (not a partial one: one notification's own
    /// transaction says nothing of the state then) and answers the status intervals all its
    /// facts show, when they may differ from `known` (nil: they stay). The fact's time is the
    /// state's store time (Apple: the newest `signedDate` of the data the state was read from),
    /// but for Play, which signs no time and whose state's store time is when it was read, the
    /// time of the change its first event names (the notification's `eventTimeMillis`). The
    /// facts are read only when this one is in a passing state or intervals are known: otherwise
    /// none can start or end here.
    static func recordStateFact(
        _ tx: any LedgerTransaction, _ state: Subscription, events: [LifecycleEvent], partial: Bool,
        known: [StatusInterval]
    ) throws -> [StatusInterval]? {
        let time = state.key.store == .google ? events.first?.storeTimeMilliseconds : nil
        guard !partial, let fact = StateFact(state, time: time) else { return nil }
        try tx.enqueue(
            """
            INSERT INTO state_facts (store, environment, store_id, store_time_ms, state_code, start_ms, stated_end_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING
            """,
            keyParameters(state.key) + [
                .int(fact.storeTimeMilliseconds), .int(Int64(fact.state.rawValue)), .int(fact.startMilliseconds),
                .int(fact.statedEndMilliseconds),
            ])
        guard StatusInterval.isPassing(fact.state) || !known.isEmpty else { return nil }
        let rows = try tx.query(
            """
            SELECT store_time_ms, state_code, start_ms, stated_end_ms FROM state_facts
            WHERE store = $1 AND environment = $2 AND store_id = $3
            """, keyParameters(state.key))
        var facts: Set<StateFact> = [fact]
        for index in 0..<rows.count {
            guard let code = rows.int(index, "state_code"), let recorded = SubscriptionState(rawValue: Int32(code))
            else { continue }
            facts.insert(
                StateFact(
                    storeTimeMilliseconds: rows.int(index, "store_time_ms") ?? 0, state: recorded,
                    startMilliseconds: rows.int(index, "start_ms") ?? 0, statedEnd: rows.int(index, "stated_end_ms")))
        }
        return StateFact.intervals(facts)
    }

    static func check(_ periods: [Period]) throws {
        guard periods.count <= maxPeriods else {
            throw LedgerError.invalidArgument("at most \(maxPeriods) periods per request, got \(periods.count)")
        }
        for (index, period) in periods.enumerated() {
            let field = "periods[\(index)]"
            try check(period.periodID, "\(field).period_id", max: maxIDBytes)
            try check(period.productID, "\(field).product_id", max: maxIDBytes)
            for (value, name) in [(period.basePlanID, "base_plan_id"), (period.revocationReason, "revocation_reason")] {
                try checkOptional(value ?? "", "\(field).\(name)", max: maxIDBytes)
            }
            try checkOptional(period.raw ?? "", "\(field).raw", max: maxPayloadBytes)
            guard period.startMilliseconds > 0 else {
                throw LedgerError.invalidArgument("\(field).start_ms is missing: a period starts somewhere")
            }
            if let end = period.endMilliseconds, end < period.startMilliseconds {
                throw LedgerError.invalidArgument(
                    "\(field).end_ms \(end) is before its start_ms \(period.startMilliseconds)")
            }
        }
    }

    /// An event as the change feed carries it: the raw store data (tens of KiB for an Apple
    /// notification) stays in the history, which `GetHistory` serves.
    static func withoutRawData(_ event: LifecycleEvent) -> LifecycleEvent {
        var event = event
        event.rawPayload = nil
        event.rawTransaction = nil
        event.rawRenewalInfo = nil
        return event
    }

    /// Marks a notification processed, counting the attempt, unless it was rejected (kept for
    /// audit only).
    static func markProcessed(_ tx: any LedgerTransaction, store: Store, notificationID: String) throws {
        let update = try tx.query(
            "UPDATE inbox SET status = $1 WHERE store = $2 AND notification_id = $3 AND status <> $4",
            [
                .int(Int64(InboxStatus.processed.rawValue)), .int(Int64(store.rawValue)),
                .text(notificationID), .int(Int64(InboxStatus.rejected.rawValue)),
            ])
        if update.affected == 1 {
            var entry = try Self.inboxEntry(tx, store: store, notificationID: notificationID)
            entry.status = .processed
            entry.attempts += 1
            try Self.saveInbox(tx, entry, store: store)
        }
    }

    static func linkedAccount(_ tx: any LedgerTransaction, _ key: SubscriptionKey) throws -> String? {
        try tx.query(
            "SELECT account_id FROM links WHERE store = $1 AND environment = $2 AND store_id = $3", keyParameters(key)
        ).text(0, "account_id")
    }

    static func insertEvent(_ tx: any LedgerTransaction, _ event: LifecycleEvent) throws {
        try tx.enqueue(
            """
            INSERT INTO events (store, environment, store_id, account_id, other_account_id, position, event)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            keyParameters(event.key) + [
                .text(event.accountID), .text(event.otherAccountID), .int(Int64(event.position ?? 0)),
                .blob(event.serialized()),
            ])
    }

    static func link(_ rows: SQLRows, _ index: Int) throws -> AccountLink {
        guard let store = rows.int(index, "store").flatMap({ Store(rawValue: Int32($0)) }),
            let environment = rows.int(index, "environment").flatMap({ StoreEnvironment(rawValue: Int32($0)) }),
            let storeID = rows.text(index, "store_id"), let account = rows.text(index, "account_id")
        else { throw LedgerStorageError.corrupt("links row \(index)") }
        return AccountLink(
            accountID: account, key: SubscriptionKey(store: store, environment: environment, storeID: storeID),
            storeAccountRef: rows.text(index, "store_account_ref"), linkedTimeMilliseconds: rows.int(index, "linked_ms")
        )
    }

    static func inboxEntry(_ tx: any LedgerTransaction, store: Store, notificationID: String) throws -> InboxEntry {
        let rows = try tx.query(
            "SELECT status, attempts, last_error, entry FROM inbox WHERE store = $1 AND notification_id = $2",
            [.int(Int64(store.rawValue)), .text(notificationID)])
        guard !rows.isEmpty else {
            throw LedgerError.notFound("no inbox entry \(store)/\(notificationID.prefix(Self.maxIDBytes))")
        }
        return try inboxEntry(rows, 0)
    }

    /// The stored entry with its queue columns (status, attempts, last error) applied.
    static func inboxEntry(_ rows: SQLRows, _ index: Int) throws -> InboxEntry {
        var entry = try decode(InboxEntry.self, rows.blob(index, "entry"))
        entry.status = rows.int(index, "status").flatMap { InboxStatus(rawValue: Int32($0)) }
        entry.attempts = UInt32(clamping: rows.int(index, "attempts") ?? 0)
        entry.lastError = rows.text(index, "last_error")
        return entry
    }

    static func saveInbox(_ tx: any LedgerTransaction, _ entry: InboxEntry, store: Store) throws {
        try tx.enqueue(
            "UPDATE inbox SET status = $1, attempts = $2, last_error = $3, entry = $4 WHERE store = $5 AND notification_id = $6",
            [
                .int(Int64(entry.status?.rawValue ?? 0)), .int(Int64(entry.attempts)), .text(entry.lastError),
                .blob(entry.serialized()), .int(Int64(store.rawValue)), .text(entry.notificationID),
            ])
    }

    /// The stored answer for an idempotency key used before with the same request; throws
    /// FAILED_PRECONDITION when it was used with a different one.
    static func replay<Response: ProtoMessage>(
        _ tx: any LedgerTransaction, _ key: String, _ hash: String, as: Response.Type
    ) throws -> Response? {
        let rows = try tx.query(
            "SELECT request_hash, response FROM idempotency WHERE idempotency_key = $1", [.text(key)])
        guard let stored = rows.text(0, "request_hash") else { return nil }
        return try replayed(key, stored, hash, rows.blob(0, "response"), as: Response.self)
    }

    /// The stored answer when `storedHash` is this request's; FAILED_PRECONDITION otherwise.
    static func replayed<Response: ProtoMessage>(
        _ key: String, _ storedHash: String, _ hash: String, _ response: [UInt8]?, as: Response.Type
    ) throws -> Response {
        if storedHash.hasPrefix(deletedRecordPrefix) {
            throw LedgerError.failedPrecondition(
                "idempotency key \"\(key)\" was used for a request about an account deleted since: it is not run again")
        }
        guard storedHash == hash else {
            throw LedgerError.failedPrecondition("idempotency key \"\(key)\" was already used with a different request")
        }
        return try decode(Response.self, response)
    }

    static func remember<Response: ProtoMessage>(
        _ tx: any LedgerTransaction, _ key: String, _ hash: String, _ response: Response, at: Int64
    ) throws {
        try tx.enqueue(
            "INSERT INTO idempotency (idempotency_key, request_hash, response, created_ms) VALUES ($1, $2, $3, $4)",
            [.text(key), .text(hash), .blob(response.serialized()), .int(at)])
    }

    static func decode<Message: ProtoMessage>(_ type: Message.Type, _ bytes: [UInt8]?) throws -> Message {
        guard let bytes else { throw LedgerStorageError.corrupt("\(Message.protoName) is missing") }
        do {
            return try Message(serialized: bytes)
        } catch {
            throw LedgerStorageError.corrupt("\(Message.protoName): \(error.message)")
        }
    }
}
