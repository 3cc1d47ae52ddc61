import Dispatch
import PostgreSQL
import Synchronization
import Wire

/// The ledger on a PostgreSQL server: one writer connection with group commit on its own serial
/// queue, and a pool of reader connections that each read one snapshot.
///
/// Writes queue on a `GroupCommitter`: each batch is one transaction (`BEGIN` … `COMMIT`, with
/// `synchronous_commit = on`, so a returned write is durable) holding every write in a savepoint
/// of its own. When the writer connection breaks, the batch that found it broken fails as a
/// whole and the connection is reopened before the next batch. Reads run on the pool inside
/// `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`, so one body sees one snapshot.
public final class PostgresLedgerDatabase: LedgerDatabase {
    public let dialect = SQLDialect.postgres
    /// `host:port/dbname` of the server, for logs (never the user or password).
    public let endpoint: String
    private let writer: PostgresLedgerWriter
    private let writeQueue = DispatchQueue(label: "ledger.postgres.writer")
    private let pool: PostgresPool
    private let committer: GroupCommitter
    private let closed = Atomic(false)

    /// Connects the writer (blocking until the server answers) and makes the reader pool, whose
    /// connections open on first use.
    ///
    /// - Parameters:
    ///   - url: `postgresql://user:password@host:port/dbname` or a libpq key=value string.
    ///   - poolSize: the most reader connections open at once (at least 1).
    ///   - maxBatch: the most writes committed in one transaction.
    ///   - schema: when given, every connection works in this schema (`search_path`), which is
    ///     created if missing; tests use it to keep each run apart.
    /// - Throws: `PostgresError` (`.invalidURL`, `.connection`, or `.query` when the schema
    ///   cannot be made); no error repeats the URL's password.
    public init(
        url: String, poolSize: Int = 4, maxBatch: Int = 256, schema: String? = nil,
        counters: CommitCounters = CommitCounters()
    ) throws {
        var onConnect: PostgresConnection.OnConnect?
        if let schema {
            guard !schema.isEmpty, !schema.utf8.contains(0) else {
                throw PostgresError(code: .query, message: "a schema name must be non-empty and hold no NUL character")
            }
            let setPath = "SET search_path TO \(Self.quotedIdentifier(schema))"
            onConnect = { connection throws(PostgresError) in _ = try connection.execute(setPath) }
        }
        pool = try PostgresPool(url: url, size: poolSize, onConnect: onConnect)
        endpoint = pool.endpoint
        let connection = try PostgresConnection(url: url, onConnect: onConnect)
        if let schema {
            // Instances starting together take turns, as in migrate: concurrent
            // CREATE SCHEMA IF NOT EXISTS can otherwise fail with a unique violation.
            try connection.transaction { connection in
                try connection.execute("SELECT pg_advisory_xact_lock($1)", [.int(LedgerSchema.migrationLockID)])
                try connection.execute("CREATE SCHEMA IF NOT EXISTS \(Self.quotedIdentifier(schema))")
            }
        }
        let writer = PostgresLedgerWriter(connection: connection)
        self.writer = writer
        committer = GroupCommitter(
            queue: writeQueue, maxBatch: maxBatch, counters: counters,
            isStatementFailure: { error in
                guard let error = error as? PostgresError else { return false }
                return !error.isConnectionFailure
            }
        ) { batch in
            try writer.transaction(prepares: true) { tx in
                // Every write batch of every instance holds this lock until it commits, taken
                // before any savepoint (a rollback to a savepoint would release it): writes on
                // one database run one batch at a time, reads inside them see every earlier
                // commit, and change positions become visible in order.
                try tx.enqueue("SELECT pg_advisory_xact_lock($1)", [.int(LedgerSchema.positionLockID)])
                try batch(tx)
            }
        }
    }

    public func write<T: Sendable>(
        _ body: @escaping @Sendable (any LedgerTransaction) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        committer.submit(body, completion: completion)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any LedgerTransaction) throws -> T) async throws -> T {
        guard !closed.load(ordering: .relaxed) else { throw LedgerStorageError.closed }
        return try await pool.withConnection { connection in
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let value: T
            do {
                value = try body(PostgresLedgerTransaction(connection: connection, prepares: true))
            } catch {
                // Should ROLLBACK fail too, the pool drops the connection it left in a transaction.
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
            try connection.execute("COMMIT")
            return value
        }
    }

    /// Applies `LedgerSchema`'s migrations in one transaction on the writer connection; the
    /// schema's advisory lock makes instances that start together take turns.
    public func migrate() async throws {
        guard !closed.load(ordering: .relaxed) else { throw LedgerStorageError.closed }
        let writer = self.writer
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            writeQueue.async {
                continuation.resume(
                    with: Result {
                        // DDL runs once: not worth a prepared statement.
                        try writer.transaction(prepares: false) { tx in try LedgerSchema.migrate(tx, dialect: .postgres)
                        }
                    })
            }
        }
    }

    /// Refuses new calls, lets the writes already queued finish, then closes the writer
    /// connection; pooled connections close once idle.
    public func classify(_ error: any Error) -> StorageFailure? {
        guard let error = error as? PostgresError else { return nil }
        if error.isUniqueViolation || error.isSerializationFailure { return .retry }
        if error.sqlState == "53100" {
            return .status(LedgerError.resourceExhausted("the ledger's disk is full; nothing was recorded"))
        }
        if error.isConnectionFailure {
            return .status(LedgerError.unavailable("the ledger's database is unreachable; try again"))
        }
        return nil
    }

    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        committer.close()
        pool.close()
        let writer = self.writer
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writeQueue.async {
                writer.close()
                continuation.resume()
            }
        }
    }

    /// `name` as a quoted SQL identifier: `"…"` with inner quotes doubled.
    static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }
}

/// The writer connection and whether it must be reopened before its next use.
private final class PostgresLedgerWriter: @unchecked Sendable {  // fields are touched only on the writer queue
    private var connection: PostgresConnection?
    private var needsReset = false

    init(connection: PostgresConnection) { self.connection = connection }

    /// Runs `body` in one transaction, first reopening a connection that broke earlier. A
    /// failure that leaves the connection broken (or stuck in a transaction) marks it for reset.
    func transaction<T>(prepares: Bool, _ body: (any LedgerTransaction) throws -> T) throws -> T {
        guard let connection else { throw LedgerStorageError.closed }
        if needsReset || !connection.isHealthy {
            try connection.reset()
            needsReset = false
        }
        do {
            // BEGIN and COMMIT travel with the statements around them.
            let tx = PostgresLedgerTransaction(connection: connection, prepares: prepares)
            try tx.enqueue("BEGIN", [])
            let value: T
            do {
                value = try body(tx)
                try tx.commit()
            } catch {
                tx.discardAllPending()
                if connection.isInTransaction { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
            return value
        } catch {
            if (error as? PostgresError)?.isConnectionFailure == true || !connection.isHealthy
                || connection.isInTransaction
            {
                needsReset = true
            }
            throw error
        }
    }

    /// Drops the connection (PQfinish); later transactions throw `LedgerStorageError.closed`.
    func close() { connection = nil }
}
