import Foundation
import Model
import Wire

/// The ledger's tables, as numbered migrations. A migration runs once, in the transaction that
/// records it in `schema_migrations`; on PostgreSQL an advisory lock held for that transaction
/// makes instances that start together take turns, so each migration runs exactly once.
///
/// State and events are stored as their serialized protobuf messages (`state`, `event`,
/// `entry`, `change` columns) beside the columns queries filter and order by: the messages
/// carry every field the API has, and a field added later needs no column.
enum LedgerSchema {
    /// Taken by `migrate` on PostgreSQL (an arbitrary constant of this application).
    static let migrationLockID: Int64 = 7_220_001
    /// Taken by every write that allocates change-feed positions on PostgreSQL.
    static let positionLockID: Int64 = 7_220_002

    /// One numbered step: its statements, then (when given) a pass in Swift over existing rows.
    struct Migration {
        let version: Int64
        let statements: [String]
        var backfill: ((any LedgerTransaction) throws -> Void)? = nil
    }

    static func migrations(_ dialect: SQLDialect) -> [Migration] {
        let blob = dialect == .sqlite ? "BLOB" : "BYTEA"
        let bigint = dialect == .sqlite ? "INTEGER" : "BIGINT"
        let serial = dialect == .sqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY"
        return [
            Migration(
                version: 1,
                statements: [
                    """
                    CREATE TABLE subscriptions (
                        store \(bigint) NOT NULL, environment \(bigint) NOT NULL, store_id TEXT NOT NULL,
                        account_id TEXT, store_time_ms \(bigint), position \(bigint) NOT NULL,
                        state \(blob) NOT NULL,
                        PRIMARY KEY (store, environment, store_id))
                    """,
                    "CREATE INDEX subscriptions_by_account ON subscriptions (account_id)",
                    """
                    CREATE TABLE events (
                        id \(serial), store \(bigint) NOT NULL, environment \(bigint) NOT NULL,
                        store_id TEXT NOT NULL, account_id TEXT, other_account_id TEXT,
                        position \(bigint) NOT NULL, event \(blob) NOT NULL)
                    """,
                    "CREATE INDEX events_by_key ON events (store, environment, store_id, id)",
                    "CREATE INDEX events_by_account ON events (account_id, id)",
                    "CREATE INDEX events_by_other_account ON events (other_account_id, id)",
                    """
                    CREATE TABLE links (
                        store \(bigint) NOT NULL, environment \(bigint) NOT NULL, store_id TEXT NOT NULL,
                        account_id TEXT NOT NULL, store_account_ref TEXT, linked_ms \(bigint) NOT NULL,
                        PRIMARY KEY (store, environment, store_id))
                    """,
                    "CREATE INDEX links_by_account ON links (account_id)",
                    """
                    CREATE TABLE inbox (
                        store \(bigint) NOT NULL, notification_id TEXT NOT NULL, status \(bigint) NOT NULL,
                        attempts \(bigint) NOT NULL, last_error TEXT, received_ms \(bigint) NOT NULL,
                        entry \(blob) NOT NULL,
                        PRIMARY KEY (store, notification_id))
                    """,
                    "CREATE INDEX inbox_by_status ON inbox (status, received_ms)",
                    """
                    CREATE TABLE idempotency (
                        idempotency_key TEXT PRIMARY KEY, request_hash TEXT NOT NULL,
                        response \(blob) NOT NULL, created_ms \(bigint) NOT NULL)
                    """,
                    """
                    CREATE TABLE changes (
                        position \(bigint) PRIMARY KEY, committed_ms \(bigint) NOT NULL, change \(blob) NOT NULL)
                    """,
                ]),
            // Reconciliation finds subscriptions by state and end of period; cursors keep its
            // watermarks.
            Migration(
                version: 2,
                statements: [
                    "ALTER TABLE subscriptions ADD COLUMN state_code \(bigint)",
                    "ALTER TABLE subscriptions ADD COLUMN expires_ms \(bigint)",
                    "CREATE INDEX subscriptions_by_state ON subscriptions (store, state_code, expires_ms)",
                    "CREATE INDEX subscriptions_by_expiry ON subscriptions (store, expires_ms)",
                    """
                    CREATE TABLE cursors (
                        name TEXT PRIMARY KEY, value \(bigint) NOT NULL, updated_ms \(bigint) NOT NULL)
                    """,
                ],
                backfill: backfillStateColumns),
            // Verified periods: one row per (subscription, Apple transaction or Google order),
            // the version that stands (`Period.standing`); its raw signed data in a column of
            // its own, so that working out a subscription's access periods reads none of it.
            Migration(
                version: 3,
                statements: [
                    """
                    CREATE TABLE periods (
                        store \(bigint) NOT NULL, environment \(bigint) NOT NULL, store_id TEXT NOT NULL,
                        period_id TEXT NOT NULL, start_ms \(bigint) NOT NULL, period \(blob) NOT NULL, raw TEXT,
                        PRIMARY KEY (store, environment, store_id, period_id))
                    """
                ]),
            // The event log the entitlement service appends to (ListEvents reads it), the access it
            // has announced (where its computation resumes), and named leases.
            Migration(
                version: 4,
                statements: [
                    """
                    CREATE TABLE event_log (
                        seq \(serial), id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, account_id TEXT,
                        feed_position \(bigint) NOT NULL, event \(blob) NOT NULL)
                    """,
                    "CREATE INDEX event_log_by_account ON event_log (account_id, seq)",
                    """
                    CREATE TABLE access_state (
                        account_id TEXT NOT NULL, capability TEXT NOT NULL, state \(blob) NOT NULL,
                        PRIMARY KEY (account_id, capability))
                    """,
                    "CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_ms \(bigint) NOT NULL)",
                ]),
            // Webhook delivery per endpoint: how far the log is delivered, whether the receiver
            // disabled it, and the failed attempts (retrying, or given up: dead letters).
            Migration(
                version: 5,
                statements: [
                    """
                    CREATE TABLE webhook_state (
                        endpoint TEXT PRIMARY KEY, delivered_through \(bigint) NOT NULL, disabled_ms \(bigint))
                    """,
                    """
                    CREATE TABLE webhook_attempts (
                        endpoint TEXT NOT NULL, seq \(bigint) NOT NULL, dead_ms \(bigint), attempt \(blob) NOT NULL,
                        PRIMARY KEY (endpoint, seq))
                    """,
                    "CREATE INDEX webhook_attempts_dead ON webhook_attempts (dead_ms, endpoint, seq)",
                ]),
            // Every verified state's store time and state (and, for a passing one, where it began
            // and its stated end): the status intervals are worked out from them.
            Migration(
                version: 6,
                statements: [
                    """
                    CREATE TABLE state_facts (
                        store \(bigint) NOT NULL, environment \(bigint) NOT NULL, store_id TEXT NOT NULL,
                        store_time_ms \(bigint) NOT NULL, state_code \(bigint) NOT NULL, start_ms \(bigint) NOT NULL,
                        stated_end_ms \(bigint),
                        PRIMARY KEY (store, environment, store_id, store_time_ms, state_code))
                    """
                ]),
            // Finding a subscription by what a customer quotes: a key's store id alone (an Apple
            // original transaction id, a Google purchase token), and the ids of its periods as
            // the stores show them (an Apple transaction id, a Google order id and its base
            // order id), filled by every write of a period and here from the periods recorded.
            Migration(
                version: 7,
                statements: [
                    "CREATE INDEX subscriptions_by_store_id ON subscriptions (store_id)",
                    """
                    CREATE TABLE period_lookup (
                        lookup_id TEXT NOT NULL, store \(bigint) NOT NULL, environment \(bigint) NOT NULL,
                        store_id TEXT NOT NULL,
                        PRIMARY KEY (lookup_id, store, environment, store_id))
                    """,
                ],
                backfill: backfillPeriodLookup),
            // Following one call: the trace id (W3C Trace Context) of the call that received an
            // inbox entry or recorded an event, found by index (`FindTrace`). Rows from before
            // have none and stay out of the indexes.
            Migration(
                version: 8,
                statements: [
                    "ALTER TABLE inbox ADD COLUMN trace_id TEXT",
                    "CREATE INDEX inbox_by_trace ON inbox (trace_id, received_ms) WHERE trace_id IS NOT NULL",
                    "ALTER TABLE events ADD COLUMN trace_id TEXT",
                    "CREATE INDEX events_by_trace ON events (trace_id, id) WHERE trace_id IS NOT NULL",
                ]),
            // The work queue of Google purchases recorded but not yet acknowledged at Google
            // (`ListSubscriptions` with `unacknowledged`): 1 on those rows, NULL on every other,
            // so that the index holds only the queue.
            Migration(
                version: 9,
                statements: [
                    "ALTER TABLE subscriptions ADD COLUMN unacknowledged \(bigint)",
                    """
                    CREATE INDEX subscriptions_unacknowledged ON subscriptions (store, environment, store_id)
                    WHERE unacknowledged = 1
                    """,
                ],
                backfill: backfillUnacknowledged),
        ]
    }

    /// Fills `period_lookup` from the periods recorded.
    static func backfillPeriodLookup(_ tx: any LedgerTransaction) throws {
        let rows = try tx.query("SELECT store, environment, store_id, period_id FROM periods")
        for index in 0..<rows.count {
            guard let store = rows.int(index, "store").flatMap({ Store(rawValue: Int32($0)) }),
                let environment = rows.int(index, "environment").flatMap({ StoreEnvironment(rawValue: Int32($0)) }),
                let storeID = rows.text(index, "store_id"), let periodID = rows.text(index, "period_id")
            else { continue }
            try LedgerStore(tx).indexPeriod(
                SubscriptionKey(store: store, environment: environment, storeID: storeID), periodID: periodID)
        }
    }

    /// Fills `state_code` and `expires_ms` from each stored state.
    static func backfillStateColumns(_ tx: any LedgerTransaction) throws {
        try backfill(tx, "state_code = $1, expires_ms = $2") { state in
            [.int(state.state.map { Int64($0.rawValue) }), .int(state.expiresTimeMilliseconds)]
        }
    }

    /// Fills `unacknowledged` from each stored state.
    static func backfillUnacknowledged(_ tx: any LedgerTransaction) throws {
        try backfill(tx, "unacknowledged = $1") { [.int(LedgerStore.unacknowledgedColumn($0))] }
    }

    /// Sets `assignments` (of parameters $1…) on each subscription row to the `values` its
    /// stored state gives.
    private static func backfill(
        _ tx: any LedgerTransaction, _ assignments: String, _ values: (Subscription) -> [SQLValue]
    ) throws {
        let rows = try tx.query("SELECT store, environment, store_id, state FROM subscriptions")
        for index in 0..<rows.count {
            guard let bytes = rows.blob(index, "state") else { continue }
            let parameters = values(try Subscription(serialized: bytes))
            let n = parameters.count
            try tx.query(
                "UPDATE subscriptions SET \(assignments) WHERE store = $\(n + 1) AND environment = $\(n + 2) "
                    + "AND store_id = $\(n + 3)",
                parameters + [
                    .int(rows.int(index, "store") ?? 0), .int(rows.int(index, "environment") ?? 0),
                    .text(rows.text(index, "store_id") ?? ""),
                ])
        }
    }

    /// Applies every migration newer than the recorded version, in the caller's transaction.
    static func migrate(_ tx: any LedgerTransaction, dialect: SQLDialect) throws {
        if dialect == .postgres {
            try tx.query("SELECT pg_advisory_xact_lock($1)", [.int(migrationLockID)])
        }
        let bigint = dialect == .sqlite ? "INTEGER" : "BIGINT"
        try tx.query(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version \(bigint) PRIMARY KEY, applied_ms \(bigint) NOT NULL)"
        )
        let current =
            try tx.query("SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations").int(0, "version") ?? 0
        let at = Int64(Date().timeIntervalSince1970 * 1000)
        for migration in migrations(dialect) where migration.version > current {
            for statement in migration.statements { try tx.query(statement) }
            try migration.backfill?(tx)
            try tx.query(
                "INSERT INTO schema_migrations (version, applied_ms) VALUES ($1, $2)",
                [.int(migration.version), .int(at)])
        }
        // A new database holds no state derived under older access rules.
        if current == 0 {
            try tx.query(
                "INSERT INTO cursors (name, value, updated_ms) VALUES ($1, $2, $3)",
                [.text(Ledger.accessRulesCursor), .int(Ledger.appStoreAccessRulesVersion), .int(at)])
        }
    }
}
