import Foundation

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

    static func migrations(_ dialect: SQLDialect) -> [(version: Int64, statements: [String])] {
        let blob = dialect == .sqlite ? "BLOB" : "BYTEA"
        let bigint = dialect == .sqlite ? "INTEGER" : "BIGINT"
        let serial = dialect == .sqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY"
        return [
            (
                1,
                [
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
                ]
            )
        ]
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
        for migration in migrations(dialect) where migration.version > current {
            for statement in migration.statements { try tx.query(statement) }
            try tx.query(
                "INSERT INTO schema_migrations (version, applied_ms) VALUES ($1, $2)",
                [.int(migration.version), .int(Int64(Date().timeIntervalSince1970 * 1000))])
        }
    }
}
