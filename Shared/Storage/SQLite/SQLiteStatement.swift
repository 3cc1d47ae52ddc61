import CSQLite

/// One prepared statement of one connection; reused, reset after every run. Confined to the
/// database's lock.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private let database: OpaquePointer

    init(database: OpaquePointer, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else {
            throw SQLiteError(
                code: sqlite3_extended_errcode(database), message: String(cString: sqlite3_errmsg(database)))
        }
        self.handle = statement
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `parameters` to `?1…?n` (or `$1…$n` in order), runs to completion and copies the rows.
    func run(_ parameters: [SQLiteValue]) throws(SQLiteError) -> SQLiteRows {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try bind(parameters)
        let columns = Int(sqlite3_column_count(handle))
        let names = (0..<columns).map { String(cString: sqlite3_column_name(handle, Int32($0))) }
        var rows: [[SQLiteValue]] = []
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            var row: [SQLiteValue] = []
            row.reserveCapacity(columns)
            for column in 0..<Int32(columns) {
                switch sqlite3_column_type(handle, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(handle, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(handle, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(handle, column))
                    let pointer = sqlite3_column_blob(handle, column)
                    row.append(.blob(count == 0 ? [] : [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))))
                case SQLITE_FLOAT: row.append(.integer(Int64(sqlite3_column_double(handle, column))))
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return SQLiteRows(columnNames: names, rows: rows, changes: Int(sqlite3_changes(database)))
    }

    /// Binds `parameters`, then calls `row` with each row as the statement steps to it: the
    /// columns are read in place (valid only during the call), nothing is copied unless `row`
    /// copies it.
    func scan(_ parameters: [SQLiteValue], _ row: (SQLiteRowCursor) throws -> Void) throws {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try bind(parameters)
        let cursor = SQLiteRowCursor(handle: handle)
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            try row(cursor)
        }
    }

    private func bind(_ parameters: [SQLiteValue]) throws(SQLiteError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard expected == parameters.count else {
            throw SQLiteError(
                code: SQLITE_RANGE, message: "statement takes \(expected) parameters, \(parameters.count) given")
        }
        for (offset, parameter) in parameters.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch parameter {
            case .integer(let value): rc = sqlite3_bind_int64(handle, index, value)
            case .text(let value): rc = sqlite3_bind_text(handle, index, value, -1, Self.transient)
            case .blob(let value):
                rc = value.withUnsafeBytes { bytes in
                    // A zero-length blob needs a non-null pointer to be a blob rather than NULL.
                    sqlite3_bind_blob64(
                        handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(bytes.count),
                        Self.transient)
                }
            case .null: rc = sqlite3_bind_null(handle, index)
            }
            guard rc == SQLITE_OK else { throw error(rc) }
        }
    }

    private func error(_ rc: Int32) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(database), message: String(cString: sqlite3_errmsg(database)))
    }

    /// SQLITE_TRANSIENT: SQLite copies the bound bytes before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// The row a scan stands on; its values are valid only during the call that received it.
public struct SQLiteRowCursor {
    fileprivate let handle: OpaquePointer

    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    /// The bytes of a blob or text column, in place.
    public func bytes(_ column: Int32) -> UnsafeRawBufferPointer {
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return UnsafeRawBufferPointer(start: count == 0 ? nil : pointer, count: count)
    }

    public func text(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        return String(cString: text)
    }
}
