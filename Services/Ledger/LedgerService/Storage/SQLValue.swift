/// A statement parameter or column value, the same for both engines.
public enum SQLValue: Sendable, Hashable {
    case int(Int64)
    case text(String)
    case blob([UInt8])
    case null

    /// `.text` for a present string, `.null` for nil.
    public static func text(_ value: String?) -> SQLValue { value.map { .text($0) } ?? .null }
    /// `.int` for a present number, `.null` for nil.
    public static func int(_ value: Int64?) -> SQLValue { value.map { .int($0) } ?? .null }
}

/// Rows a statement returned, copied out of the engine.
public struct SQLRows: Sendable {
    public let columns: [String]
    public let rows: [[SQLValue]]
    /// Rows the statement inserted, updated or deleted.
    public let affected: Int

    public init(columns: [String], rows: [[SQLValue]], affected: Int) {
        self.columns = columns
        self.rows = rows
        self.affected = affected
    }

    public var count: Int { rows.count }
    public var isEmpty: Bool { rows.isEmpty }

    private func value(_ row: Int, _ column: String) -> SQLValue {
        guard row < rows.count, let index = columns.firstIndex(of: column) else { return .null }
        return rows[row][index]
    }

    public func int(_ row: Int, _ column: String) -> Int64? {
        switch value(row, column) {
        case .int(let value): value
        case .text(let text): Int64(text)
        default: nil
        }
    }

    public func text(_ row: Int, _ column: String) -> String? {
        switch value(row, column) {
        case .text(let value): value
        case .int(let value): String(value)
        default: nil
        }
    }

    public func blob(_ row: Int, _ column: String) -> [UInt8]? {
        switch value(row, column) {
        case .blob(let value): value
        case .text(let value): Array(value.utf8)
        default: nil
        }
    }
}
