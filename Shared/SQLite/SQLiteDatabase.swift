import CSQLite
import Synchronization

/// One SQLite connection on a file, opened for durable use: WAL journal, `synchronous=FULL`
/// (a commit survives power loss once it returns), a busy timeout, foreign keys on.
/// Calls are serialized by a lock; they block, so callers keep them off the cooperative pool.
public final class SQLiteDatabase: Sendable {
    // The sqlite3 handle is only used under `lock`.
    private nonisolated(unsafe) let handle: OpaquePointer
    private let lock = Mutex(())
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

    deinit { sqlite3_close_v2(handle) }

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
