/// The rows a statement returned, copied out of SQLite before the statement was reset.
public struct SQLiteRows: Sendable {
    public let columnNames: [String]
    public let rows: [[SQLiteValue]]
    /// Rows inserted, updated or deleted by the statement (`sqlite3_changes`).
    public let changes: Int

    public var count: Int { rows.count }

    /// The value at `row` in the column named `column`; `.null` when there is no such column.
    public func value(_ row: Int, _ column: String) -> SQLiteValue {
        guard let index = columnNames.firstIndex(of: column) else { return .null }
        return rows[row][index]
    }

    public func int64(_ row: Int, _ column: String) -> Int64? {
        if case .integer(let value) = value(row, column) { return value }
        return nil
    }

    public func string(_ row: Int, _ column: String) -> String? {
        if case .text(let value) = value(row, column) { return value }
        return nil
    }

    public func bytes(_ row: Int, _ column: String) -> [UInt8]? {
        switch value(row, column) {
        case .blob(let value): return value
        case .text(let value): return Array(value.utf8)
        default: return nil
        }
    }
}
