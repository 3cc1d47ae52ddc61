import Wire

/// The SQL dialect an engine speaks; statements are written once with `$1…$n` placeholders
/// and the few differences (DDL, position allocation) are chosen by dialect.
public enum SQLDialect: Sendable {
    case sqlite
    case postgres
}

/// One open transaction of a ledger database. Only valid inside the `write` or `read` body
/// that received it.
public protocol LedgerTransaction {
    /// Runs one statement with `$1…$n` bound to `parameters`.
    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> SQLRows
    /// Runs a statement whose result the caller does not need. An engine may hold it back and
    /// send it together with the next statement or `flush` (PostgreSQL: one round trip for all),
    /// so its error can surface there.
    func enqueue(_ sql: String, _ parameters: [SQLValue]) throws
    /// Sends what `enqueue` held back; throws the first error.
    func flush() throws
    /// Drops, without sending them, the statements `enqueue` held back from the last one whose
    /// SQL is `marker` on, and returns true; or, when `marker` is not among them (it went out
    /// already, and with it everything before), drops all held back and returns false.
    /// Statements held back before `marker` stay, to go out with the next round trip.
    func discardPending(from marker: String) -> Bool
    /// Runs a query and calls `row` with each row in place (valid only during the call): a
    /// long read that copies only what it keeps.
    func scan(_ sql: String, _ parameters: [SQLValue], _ row: (any SQLRowReader) throws -> Void) throws
    /// State shared by the writes of one transaction (one group-commit batch).
    var batch: TransactionBatch { get }
    /// False when the engine has ended the transaction by itself after an error, so the rest
    /// of the batch must fail rather than run outside it.
    var isOpen: Bool { get }
}

/// A row of `LedgerTransaction.scan`, by column index; valid only during the call.
public protocol SQLRowReader {
    func int(_ column: Int) -> Int64?
    func text(_ column: Int) -> String?
    /// Runs `body` on the bytes of a blob or text column in place (empty for NULL).
    func withBytes<T>(_ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T
}

/// A row of copied rows as a `SQLRowReader`.
struct CopiedRow: SQLRowReader {
    let rows: SQLRows
    let index: Int

    func int(_ column: Int) -> Int64? { rows.int(index, rows.columns[column]) }
    func text(_ column: Int) -> String? { rows.text(index, rows.columns[column]) }
    func withBytes<T>(_ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try (rows.blob(index, rows.columns[column]) ?? []).withUnsafeBytes(body)
    }
}

extension LedgerTransaction {
    public var isOpen: Bool { true }
    /// Copies the rows, then calls `row` with each.
    public func scan(_ sql: String, _ parameters: [SQLValue], _ row: (any SQLRowReader) throws -> Void) throws {
        let rows = try query(sql, parameters)
        for index in 0..<rows.count { try row(CopiedRow(rows: rows, index: index)) }
    }
    /// Runs it at once.
    public func enqueue(_ sql: String, _ parameters: [SQLValue]) throws { try query(sql, parameters) }
    public func flush() throws {}
    public func discardPending(from marker: String) -> Bool { false }
}

/// What the writes of one transaction share: the last change-feed position taken in it, so
/// the next write takes the one after without asking the database again. A write rolled back
/// to its savepoint leaves its position unused; the feed then has a gap, never a skipped change.
public final class TransactionBatch {
    public var lastPosition: UInt64?
    public init() {}
}

extension LedgerTransaction {
    @discardableResult
    public func query(_ sql: String) throws -> SQLRows { try query(sql, []) }
}

/// A storage engine for the ledger. Writes are durable when `write` returns; concurrent writes
/// may share one transaction and one sync (group commit), each in a savepoint of its own so
/// one failing write changes nothing and does not fail the others.
public protocol LedgerDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` in a write transaction; `completion` runs (on the engine's writer thread) after
    /// the commit is durable. The body may be retried by the engine (after a serialization
    /// failure), so it must not have side effects outside the transaction.
    func write<T: Sendable>(
        _ body: @escaping @Sendable (any LedgerTransaction) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void)
    /// Runs `body` against a consistent snapshot; it must not write.
    func read<T: Sendable>(_ body: @escaping @Sendable (any LedgerTransaction) throws -> T) async throws -> T
    /// Brings the schema to the newest version; safe when several instances start at once.
    func migrate() async throws
    /// Closes connections; calls after it fail.
    func close() async
    /// What an engine error means for the caller: `.retry` for a conflict with a concurrent
    /// writer (a unique key another instance just took, a serialization failure), or the status
    /// to answer (RESOURCE_EXHAUSTED for a full disk, UNAVAILABLE for a lost database); nil for
    /// anything else (INTERNAL).
    func classify(_ error: any Error) -> StorageFailure?
}

/// How the ledger answers an engine error.
public enum StorageFailure: Sendable {
    case retry
    case status(LedgerError)
}

extension LedgerDatabase {
    /// `write(_:completion:)` for async callers: returns after the commit is durable.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            write(body) { continuation.resume(with: $0) }
        }
    }
}
