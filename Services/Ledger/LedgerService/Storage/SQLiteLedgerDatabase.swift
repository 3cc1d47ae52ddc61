import Dispatch
import Foundation
import SQLite
import Synchronization
import Wire

/// The ledger on one SQLite file: one writer connection with group commit on its own thread,
/// one reader connection on another (WAL lets reads proceed while a write commits).
public final class SQLiteLedgerDatabase: LedgerDatabase {
    public let dialect = SQLDialect.sqlite
    public let path: String
    private let writer: SQLiteDatabase
    private let reader: SQLiteDatabase
    private let writeQueue = DispatchQueue(label: "ledger.sqlite.writer")
    private let readQueue = DispatchQueue(label: "ledger.sqlite.reader")
    private let committer: GroupCommitter

    /// Opens (creating if needed) the database file at `path`. Throws `SQLiteError`.
    public init(path: String, maxBatch: Int = 256, counters: CommitCounters = CommitCounters()) throws {
        self.path = path
        writer = try SQLiteDatabase(path: path)
        reader = try SQLiteDatabase(path: path)
        let writer = self.writer
        committer = GroupCommitter(queue: writeQueue, maxBatch: maxBatch, counters: counters) { batch in
            try writer.transaction { tx in try batch(SQLiteLedgerTransaction(tx: tx)) }
        }
    }

    public func write<T: Sendable>(
        _ body: @escaping @Sendable (any LedgerTransaction) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        committer.submit(body, completion: completion)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any LedgerTransaction) throws -> T) async throws -> T {
        let reader = self.reader
        return try await withCheckedThrowingContinuation { continuation in
            readQueue.async {
                continuation.resume(
                    with: Result {
                        try reader.transaction(immediate: false) { tx in try body(SQLiteLedgerTransaction(tx: tx)) }
                    })
            }
        }
    }

    public func migrate() async throws {
        let writer = self.writer
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            writeQueue.async {
                continuation.resume(
                    with: Result {
                        try writer.transaction { tx in
                            try LedgerSchema.migrate(SQLiteLedgerTransaction(tx: tx), dialect: .sqlite)
                        }
                    })
            }
        }
    }

    public func close() async { committer.close() }

    public func classify(_ error: any Error) -> StorageFailure? {
        guard let error = error as? SQLiteError else { return nil }
        if error.isDiskFull {
            return .status(LedgerError.resourceExhausted("the ledger's disk is full; nothing was recorded"))
        }
        // SQLITE_BUSY or SQLITE_LOCKED: another process holds the file longer than the busy timeout.
        if error.code & 0xff == 5 || error.code & 0xff == 6 {
            return .status(LedgerError.unavailable("the ledger's database is busy; try again"))
        }
        return nil
    }

    /// The journal mode in force (`wal`).
    public var journalMode: String { writer.journalMode }

    /// `PRAGMA integrity_check` of the file: "ok" when sound.
    public func integrityCheck() throws -> String { try reader.integrityCheck() }
}

/// Adapts a SQLite transaction: `$n` placeholders become SQLite's `?n`.
struct SQLiteLedgerTransaction: LedgerTransaction {
    let tx: SQLiteTransaction
    let batch = TransactionBatch()
    var isOpen: Bool { tx.isOpen }

    /// Converted statement texts by original: the ledger's statements are a few dozen fixed
    /// texts, converted once each (bounded, for the few built per request).
    private static let convertedTexts = Mutex<[String: String]>([:])

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> SQLRows {
        let rows = try tx.query(Self.converted(sql), parameters.map(Self.convert))
        return SQLRows(columns: rows.columnNames, rows: rows.rows.map { $0.map(Self.convert) }, affected: rows.changes)
    }

    /// Steps the statement and reads each row's columns where SQLite keeps them.
    func scan(_ sql: String, _ parameters: [SQLValue], _ row: (any SQLRowReader) throws -> Void) throws {
        try tx.scan(Self.converted(sql), parameters.map(Self.convert)) { cursor in try row(SQLiteRow(cursor: cursor)) }
    }

    /// `$n` → `?n`, byte for byte (the statement cache is keyed by the converted text).
    static func converted(_ sql: String) -> String {
        if let known = convertedTexts.withLock({ $0[sql] }) { return known }
        let text = String(decoding: sql.utf8.map { $0 == UInt8(ascii: "$") ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
        convertedTexts.withLock { if $0.count < 512 { $0[sql] = text } }
        return text
    }

    static func convert(_ value: SQLValue) -> SQLiteValue {
        switch value {
        case .int(let value): .integer(value)
        case .text(let value): .text(value)
        case .blob(let value): .blob(value)
        case .null: .null
        }
    }

    static func convert(_ value: SQLiteValue) -> SQLValue {
        switch value {
        case .integer(let value): .int(value)
        case .text(let value): .text(value)
        case .blob(let value): .blob(value)
        case .null: .null
        }
    }
}

/// A row SQLite stands on, as a `SQLRowReader`.
private struct SQLiteRow: SQLRowReader {
    let cursor: SQLiteRowCursor

    func int(_ column: Int) -> Int64? { cursor.isNull(Int32(column)) ? nil : cursor.int64(Int32(column)) }
    func text(_ column: Int) -> String? { cursor.isNull(Int32(column)) ? nil : cursor.text(Int32(column)) }
    func withBytes<T>(_ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try body(cursor.bytes(Int32(column)))
    }
}
