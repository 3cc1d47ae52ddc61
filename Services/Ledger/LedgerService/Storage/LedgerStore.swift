import Model
import Observability
import Wire

/// The ledger's rows, for both engines: every statement the ledger runs on a transaction is
/// here (and in `LedgerSchema` for the schema), with the few engine differences chosen by
/// `SQLDialect`. The rules never see SQL: they get rows as values and give back writes
/// (`LedgerWrite`), which `apply` performs.
struct LedgerStore {
    let tx: any LedgerTransaction

    init(_ tx: any LedgerTransaction) {
        self.tx = tx
    }

    static func keyParameters(_ key: SubscriptionKey) -> [SQLValue] {
        [.int(Int64(key.store.rawValue)), .int(Int64(key.environment.rawValue)), .text(key.storeID)]
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

    /// The stored entry with its queue columns (status, attempts, last error) applied.
    static func inboxEntry(_ rows: SQLRows, _ index: Int) throws -> InboxEntry {
        var entry = try Self.decode(InboxEntry.self, rows.blob(index, "entry"))
        entry.status = rows.int(index, "status").flatMap { InboxStatus(rawValue: Int32($0)) }
        entry.attempts = UInt32(clamping: rows.int(index, "attempts") ?? 0)
        entry.lastError = rows.text(index, "last_error")
        return entry
    }

    static func decode<Message: ProtoMessage>(_ type: Message.Type, _ bytes: [UInt8]?) throws -> Message {
        guard let bytes else { throw LedgerStorageError.corrupt("\(Message.protoName) is missing") }
        do {
            return try Message(serialized: bytes)
        } catch {
            throw LedgerStorageError.corrupt("\(Message.protoName): \(error.message)")
        }
    }

    /// The next change-feed position. Write transactions run one at a time (SQLite's single
    /// writer; on PostgreSQL the advisory lock every write batch takes first and holds until
    /// it commits), so positions become visible in order: a reader that has seen position n
    /// never later finds n − 1.
    func nextPosition() throws -> UInt64 {
        let next = try tx.batch.lastPosition.map { $0 + 1 } ?? UInt64(try lastPosition() + 1)
        tx.batch.lastPosition = next
        return next
    }

    func lastPosition() throws -> Int64 {
        try tx.query("SELECT COALESCE(MAX(position), 0) AS position FROM changes").int(0, "position") ?? 0
    }

    /// Appends `change`; its events carry the trace they were recorded under, as `insertEvent`
    /// stores them.
    func appendChange(_ change: Change) throws {
        var change = change
        if let trace = TraceContext.current {
            for index in change.events.indices { change.events[index].traceID = trace.traceID }
        }
        try tx.enqueue(
            "INSERT INTO changes (position, committed_ms, change) VALUES ($1, $2, $3)",
            [.int(Int64(change.position)), .int(change.committedTimeMilliseconds ?? 0), .blob(change.serialized())])
    }

    /// Stores `state` as a change of its own (no events), at the next position.
    func saveStateChange(_ state: Subscription, at: Int64) throws {
        let position = try nextPosition()
        try saveSubscription(state, position: position)
        try appendChange(
            Change(position: position, committedTimeMilliseconds: at, kind: .subscription, subscription: state))
    }

    func subscriptionRow(_ key: SubscriptionKey) throws -> Subscription? {
        let rows = try tx.query(
            "SELECT state FROM subscriptions WHERE store = $1 AND environment = $2 AND store_id = $3",
            Self.keyParameters(key))
        return rows.isEmpty ? nil : try Self.decode(Subscription.self, rows.blob(0, "state"))
    }

    func saveSubscription(_ subscription: Subscription, position: UInt64) throws {
        try tx.enqueue(
            """
            INSERT INTO subscriptions
                (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms,
                 unacknowledged)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (store, environment, store_id) DO UPDATE
            SET account_id = $4, store_time_ms = $5, position = $6, state = $7, state_code = $8, expires_ms = $9,
                unacknowledged = $10
            """,
            Self.keyParameters(subscription.key) + [
                .text(subscription.accountID), .int(subscription.storeTimeMilliseconds), .int(Int64(position)),
                .blob(subscription.serialized()), .int(subscription.state.map { Int64($0.rawValue) }),
                .int(subscription.expiresTimeMilliseconds), .int(Self.unacknowledgedColumn(subscription)),
            ])
    }

    /// The `unacknowledged` column of `subscription`'s row: 1 for a Google purchase recorded but
    /// not acknowledged at Google that may still be (neither ended nor waiting for its payment),
    /// NULL otherwise.
    static func unacknowledgedColumn(_ subscription: Subscription) -> Int64? {
        guard subscription.key.store == .google, !subscription.acknowledged else { return nil }
        switch subscription.state {
        case .expired?, .revoked?, .pending?, nil: return nil
        default: return 1
        }
    }

    /// The periods recorded for `key`, by start (at most `limit`, the latest); with `raw`, each
    /// with the signed data it came from.
    func storedPeriods(
        _ key: SubscriptionKey, limit: Int = Ledger.maxStoredPeriodRows, raw: Bool = false
    ) throws -> [Period] {
        let rows = try tx.query(
            """
            SELECT period\(raw ? ", raw" : "") FROM periods WHERE store = $1 AND environment = $2 AND store_id = $3
            ORDER BY start_ms DESC, period_id DESC LIMIT $4
            """, Self.keyParameters(key) + [.int(Int64(limit))])
        return try (0..<rows.count).reversed().map { index in
            var period = try Self.decode(Period.self, rows.blob(index, "period"))
            if raw { period.raw = rows.text(index, "raw") }
            return period
        }
    }

    /// Marks a notification processed, counting the attempt, unless it was rejected (kept for
    /// audit only).
    func markProcessed(store: Store, notificationID: String) throws {
        let update = try tx.query(
            "UPDATE inbox SET status = $1 WHERE store = $2 AND notification_id = $3 AND status <> $4",
            [
                .int(Int64(InboxStatus.processed.rawValue)), .int(Int64(store.rawValue)),
                .text(notificationID), .int(Int64(InboxStatus.rejected.rawValue)),
            ])
        if update.affected == 1 {
            var entry = try inboxEntry(store: store, notificationID: notificationID)
            entry.status = .processed
            entry.attempts += 1
            try saveInbox(entry, store: store)
        }
    }

    func linkedAccount(_ key: SubscriptionKey) throws -> String? {
        try tx.query(
            "SELECT account_id FROM links WHERE store = $1 AND environment = $2 AND store_id = $3",
            Self.keyParameters(key)
        ).text(0, "account_id")
    }

    /// Records `event` under the trace of the call that recorded it (`TraceContext.current`,
    /// which the ledger's writes run under), findable by it.
    func insertEvent(_ event: LifecycleEvent) throws {
        var event = event
        if let trace = TraceContext.current { event.traceID = trace.traceID }
        try tx.enqueue(
            """
            INSERT INTO events (store, environment, store_id, account_id, other_account_id, position, event, trace_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            Self.keyParameters(event.key) + [
                .text(event.accountID), .text(event.otherAccountID), .int(Int64(event.position ?? 0)),
                .blob(event.serialized()), .text(event.traceID),
            ])
    }

    func inboxEntry(store: Store, notificationID: String) throws -> InboxEntry {
        let rows = try tx.query(
            "SELECT status, attempts, last_error, entry FROM inbox WHERE store = $1 AND notification_id = $2",
            [.int(Int64(store.rawValue)), .text(notificationID)])
        guard !rows.isEmpty else {
            throw LedgerError.notFound("no inbox entry \(store)/\(notificationID.prefix(Ledger.maxIDBytes))")
        }
        return try Self.inboxEntry(rows, 0)
    }

    func saveInbox(_ entry: InboxEntry, store: Store) throws {
        try tx.enqueue(
            "UPDATE inbox SET status = $1, attempts = $2, last_error = $3, entry = $4 WHERE store = $5 AND notification_id = $6",
            [
                .int(Int64(entry.status?.rawValue ?? 0)), .int(Int64(entry.attempts)), .text(entry.lastError),
                .blob(entry.serialized()), .int(Int64(store.rawValue)), .text(entry.notificationID),
            ])
    }

    /// The stored answer for an idempotency key used before with the same request; throws
    /// FAILED_PRECONDITION when it was used with a different one.
    func replay<Response: ProtoMessage>(
        _ key: String, _ hash: String, as: Response.Type
    ) throws -> Response? {
        let rows = try tx.query(
            "SELECT request_hash, response FROM idempotency WHERE idempotency_key = $1", [.text(key)])
        guard let stored = rows.text(0, "request_hash") else { return nil }
        return try Ledger.replayed(key, stored, hash, rows.blob(0, "response"), as: Response.self)
    }

    func remember<Response: ProtoMessage>(_ key: String, _ hash: String, _ response: Response, at: Int64) throws {
        try remember(key, hash, serialized: response.serialized(), at: at)
    }

    func remember(_ key: String, _ hash: String, serialized response: [UInt8], at: Int64) throws {
        try tx.enqueue(
            "INSERT INTO idempotency (idempotency_key, request_hash, response, created_ms) VALUES ($1, $2, $3, $4)",
            [.text(key), .text(hash), .blob(response), .int(at)])
    }

    // MARK: Writes

    /// Performs a plan's writes, in order.
    func apply(_ writes: [LedgerWrite]) throws {
        for write in writes {
            switch write {
            case .saveSubscription(let subscription, let position):
                try saveSubscription(subscription, position: position)
            case .savePeriod(let key, let period):
                try savePeriod(key, period)
                try indexPeriod(key, periodID: period.periodID)
            case .recordStateFact(let key, let fact):
                try recordStateFact(key, fact)
            case .insertEvent(let event):
                try insertEvent(event)
            case .appendChange(let change):
                try appendChange(change)
                tx.batch.lastPosition = max(tx.batch.lastPosition ?? 0, change.position)
            case .insertLink(let link):
                try insertLink(link)
            case .saveLink(let link):
                try saveLink(link)
            case .markProcessed(let store, let notificationID):
                try markProcessed(store: store, notificationID: notificationID)
            case .remember(let key, let requestHash, let response, let at):
                try remember(key, requestHash, serialized: response, at: at)
            }
        }
    }

    /// Records one period (as stored: without raw data, which goes in a column of its own and
    /// stays when the period brings none).
    func savePeriod(_ key: SubscriptionKey, _ period: Period) throws {
        var bare = period
        bare.raw = nil
        try tx.enqueue(
            """
            INSERT INTO periods (store, environment, store_id, period_id, start_ms, period, raw)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (store, environment, store_id, period_id)
            DO UPDATE SET start_ms = $5, period = $6, raw = COALESCE($7, periods.raw)
            """,
            Self.keyParameters(key) + [
                .text(period.periodID), .int(period.startMilliseconds), .blob(bare.serialized()), .text(period.raw),
            ])
    }

    /// Makes a period findable by the ids the store shows for it (`FindSubscriptions`).
    func indexPeriod(_ key: SubscriptionKey, periodID: String) throws {
        for id in Self.lookupIDs(store: key.store, periodID: periodID) {
            try tx.enqueue(
                """
                INSERT INTO period_lookup (lookup_id, store, environment, store_id) VALUES ($1, $2, $3, $4)
                ON CONFLICT DO NOTHING
                """, [.text(id)] + Self.keyParameters(key))
        }
    }

    func recordStateFact(_ key: SubscriptionKey, _ fact: StateFact) throws {
        try tx.enqueue(
            """
            INSERT INTO state_facts (store, environment, store_id, store_time_ms, state_code, start_ms, stated_end_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING
            """,
            Self.keyParameters(key) + [
                .int(fact.storeTimeMilliseconds), .int(Int64(fact.state.rawValue)), .int(fact.startMilliseconds),
                .int(fact.statedEndMilliseconds),
            ])
    }

    /// The state facts recorded for `key`.
    func stateFacts(_ key: SubscriptionKey) throws -> [StateFact] {
        let rows = try tx.query(
            """
            SELECT store_time_ms, state_code, start_ms, stated_end_ms FROM state_facts
            WHERE store = $1 AND environment = $2 AND store_id = $3
            """, Self.keyParameters(key))
        return (0..<rows.count).compactMap { index in
            guard let code = rows.int(index, "state_code"), let recorded = SubscriptionState(rawValue: Int32(code))
            else { return nil }
            return StateFact(
                storeTimeMilliseconds: rows.int(index, "store_time_ms") ?? 0, state: recorded,
                startMilliseconds: rows.int(index, "start_ms") ?? 0, statedEnd: rows.int(index, "stated_end_ms"))
        }
    }

    /// Links a subscription unless it is linked already.
    func insertLink(_ link: AccountLink) throws {
        try tx.query(
            """
            INSERT INTO links (store, environment, store_id, account_id, store_account_ref, linked_ms)
            VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (store, environment, store_id) DO NOTHING
            """,
            Self.keyParameters(link.key) + [
                .text(link.accountID), .text(link.storeAccountRef), .int(link.linkedTimeMilliseconds),
            ])
    }

    // MARK: Reads for plans

    /// The rows a write about one subscription depends on, read in one round trip: the
    /// request's idempotency record, the subscription's state and link, those of the purchase
    /// it replaced (when `replacedStoreID` names one), and the newest committed position.
    struct KeyRows {
        var idempotency: IdempotencyRecord?
        var state: Subscription?
        var linkedAccount: String?
        var replaced: Subscription?
        var replacedLinkedAccount: String?
        var lastPosition: UInt64
    }

    /// See `KeyRows`. The first write of a batch takes its positions from the newest committed
    /// one; the next ones follow the batch's.
    func keyRows(idempotencyKey: String, key: SubscriptionKey, replacedStoreID: String?) throws -> KeyRows {
        let lookup = try tx.query(
            """
            SELECT (SELECT request_hash FROM idempotency WHERE idempotency_key = $1) AS request_hash,
                   (SELECT response FROM idempotency WHERE idempotency_key = $1) AS response,
                   (SELECT state FROM subscriptions WHERE store = $2 AND environment = $3 AND store_id = $4) AS state,
                   (SELECT account_id FROM links WHERE store = $2 AND environment = $3 AND store_id = $4) AS account_id,
                   (SELECT state FROM subscriptions WHERE store = $2 AND environment = $3 AND store_id = $5)
                       AS replaced_state,
                   (SELECT account_id FROM links WHERE store = $2 AND environment = $3 AND store_id = $5)
                       AS replaced_account_id,
                   (SELECT COALESCE(MAX(position), 0) FROM changes) AS last_position
            """,
            [.text(idempotencyKey)] + Self.keyParameters(key) + [.text(replacedStoreID)])
        let last = UInt64(lookup.int(0, "last_position") ?? 0)
        if tx.batch.lastPosition == nil { tx.batch.lastPosition = last }
        var rows = KeyRows(lastPosition: last)
        if let hash = lookup.text(0, "request_hash") {
            rows.idempotency = IdempotencyRecord(requestHash: hash, response: lookup.blob(0, "response"))
            return rows
        }
        rows.state = try lookup.blob(0, "state").map { try Self.decode(Subscription.self, $0) }
        rows.linkedAccount = lookup.text(0, "account_id")
        rows.replaced = try lookup.blob(0, "replaced_state").map { try Self.decode(Subscription.self, $0) }
        rows.replacedLinkedAccount = lookup.text(0, "replaced_account_id")
        return rows
    }

    /// What a verified state's write depends on: `keyRows`, then the periods and facts
    /// `VerifiedStatePlan.reads` asks for.
    func verifiedStateRows(_ intent: VerifiedStateIntent) throws -> VerifiedStateRows {
        let key = intent.key
        let fixed = try keyRows(
            idempotencyKey: intent.request.idempotencyKey, key: key, replacedStoreID: intent.replacedKey?.storeID)
        var rows = VerifiedStateRows(
            idempotency: fixed.idempotency, current: fixed.state, linkedAccount: fixed.linkedAccount,
            replaced: fixed.replaced, replacedLinkedAccount: fixed.replacedLinkedAccount,
            lastPosition: tx.batch.lastPosition ?? 0)
        guard rows.idempotency == nil else { return rows }
        let reads = VerifiedStatePlan.reads(intent, rows: rows)
        for periodsOf in reads.periodsOf { rows.periods[periodsOf] = try storedPeriods(periodsOf) }
        if reads.facts { rows.facts = try stateFacts(key) }
        return rows
    }
}
