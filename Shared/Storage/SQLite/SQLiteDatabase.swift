import CSQLite
import Synchronization

/// One SQLite connection on a file, opened for durable use: WAL journal, `synchronous=FULL`
/// (a commit survives power loss once it returns), a busy timeout, foreign keys on.
/// Calls are serialized by a lock; they block, so callers keep them off the cooperative pool.
public final class SQLiteDatabase: Sendable {
    // The sqlite3 handle is only used under `lock`.
    private nonisolated(unsafe) let handle: OpaquePointer
    private let lock = Mutex(())
    // Prepared statements by SQL text; touched only under `lock`.
    private nonisolated(unsafe) var statements: [String: SQLiteStatement] = [:]
    public let path: String

    /// Opens (creating if needed) the database at `path`.
    public init(path: String, busyTimeoutMilliseconds: Int32 = 5000) throws(SQLiteError) {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            // sqlite3_open_v2 hands back a handle even on failure; it must be closed.
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: "cannot open \(path): \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        do {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=FULL")
            try execute("PRAGMA foreign_keys=ON")
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows of interest.
    public func execute(_ sql: String) throws(SQLiteError) {
        try lock.withLock { _ throws(SQLiteError) in
            var error: UnsafeMutablePointer<CChar>?
            let rc = sqlite3_exec(handle, sql, nil, nil, &error)
            if rc != SQLITE_OK {
                let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
                sqlite3_free(error)
                throw SQLiteError(code: rc, message: message)
            }
        }
    }

    /// Runs one statement with `parameters` bound to `?1…?n`, prepared once per SQL text and
    /// reused, and returns its rows.
    @discardableResult
    public func query(_ sql: String, _ parameters: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteRows {
        try lock.withLock { _ throws(SQLiteError) -> SQLiteRows in try run(sql, parameters) }
    }

    /// Runs `body` in one transaction, `BEGIN IMMEDIATE` by default (the write lock is taken at
    /// once, so two writers never deadlock on upgrade; pass `immediate: false` for a read
    /// snapshot): committed when it returns, rolled back when it throws. The commit is durable
    /// when this returns (`synchronous=FULL`).
    public func transaction<T>(immediate: Bool = true, _ body: (SQLiteTransaction) throws -> T) throws -> T {
        try lock.withLock { _ in
            try run(immediate ? "BEGIN IMMEDIATE" : "BEGIN", [])
            do {
                let result = try body(SQLiteTransaction(database: self))
                try run("COMMIT", [])
                return result
            } catch {
                _ = try? run("ROLLBACK", [])
                throw error
            }
        }
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound, else the problems found.
    public func integrityCheck() throws(SQLiteError) -> String {
        let rows = try query("PRAGMA integrity_check")
        return rows.rows.compactMap { row -> String? in
            if case .text(let text) = row.first { return text }
            return nil
        }.joined(separator: "; ")
    }

    /// Runs a statement; the caller holds `lock`.
    @discardableResult
    fileprivate func run(_ sql: String, _ parameters: [SQLiteValue]) throws(SQLiteError) -> SQLiteRows {
        let statement: SQLiteStatement
        if let cached = statements[sql] {
            statement = cached
        } else {
            statement = try SQLiteStatement(database: handle, sql: sql)
            statements[sql] = statement
        }
        return try statement.run(parameters)
    }

    /// The first column of the first row of a query, as an integer (nil when there is no row).
    public func scalarInt(_ sql: String) throws(SQLiteError) -> Int64? {
        try lock.withLock { _ throws(SQLiteError) -> Int64? in
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
                throw SQLiteError(code: sqlite3_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
            }
            // The statement is finalized when this scope ends.
            defer { sqlite3_finalize(statement) }
            switch sqlite3_step(statement) {
            case SQLITE_ROW: return sqlite3_column_int64(statement, 0)
            case SQLITE_DONE: return nil
            default: throw SQLiteError(code: sqlite3_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
            }
        }
    }

    /// Scans a statement's rows in place; the caller holds `lock`.
    fileprivate func scan(_ sql: String, _ parameters: [SQLiteValue], _ row: (SQLiteRowCursor) throws -> Void) throws {
        let statement: SQLiteStatement
        if let cached = statements[sql] {
            statement = cached
        } else {
            statement = try SQLiteStatement(database: handle, sql: sql)
            statements[sql] = statement
        }
        try statement.scan(parameters, row)
    }

    /// True while a transaction is open on this connection; the caller holds `lock`.
    fileprivate var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The journal mode in force (`wal` once opened).
    public var journalMode: String {
        lock.withLock { _ in
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, "PRAGMA journal_mode", -1, &statement, nil) == SQLITE_OK else { return "" }
            defer { sqlite3_finalize(statement) }
            guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return "" }
            return String(cString: text)
        }
    }
}

/// The statements of one open transaction; valid only inside the `SQLiteDatabase.transaction`
/// body that received it (using it later fails or runs outside any transaction).
public struct SQLiteTransaction {
    fileprivate let database: SQLiteDatabase

    /// False once SQLite has rolled the whole transaction back by itself (after SQLITE_FULL,
    /// SQLITE_IOERR, SQLITE_NOMEM and the like): later statements would run outside it.
    public var isOpen: Bool { database.inTransaction }

    /// Runs one statement inside the transaction.
    @discardableResult
    public func query(_ sql: String, _ parameters: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteRows {
        try database.run(sql, parameters)
    }

    /// Runs one statement inside the transaction, calling `row` with each row in place.
    public func scan(_ sql: String, _ parameters: [SQLiteValue] = [], _ row: (SQLiteRowCursor) throws -> Void) throws {
        try database.scan(sql, parameters, row)
    }
}
