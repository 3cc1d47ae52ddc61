import CLibPQ

/// The outcome of one statement: its rows in PostgreSQL's text format and its command tag.
///
/// Owns the libpq result and frees it when the last reference goes. Getters return nil for SQL
/// NULL and throw `PostgresError` (code `.decoding`) when a column is unknown or holds another
/// type; a row or column index out of range is a programming error and traps.
public final class PostgresRows: Sendable {
    // libpq results are read-only once made, and libpq allows reading them from any thread.
    private nonisolated(unsafe) let result: OpaquePointer
    /// The number of rows returned.
    public let count: Int
    /// The result's column names, in order.
    public let columnNames: [String]

    /// Takes ownership of `result`, a successful result from libpq.
    init(taking result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
        columnNames = (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
    }

    deinit { PQclear(result) }

    /// The command tag, such as `INSERT 0 1`, `COMMIT` or `ROLLBACK`.
    public var commandTag: String { String(cString: PQcmdStatus(result)) }

    /// Rows inserted, updated, deleted, selected, moved or copied; 0 for other commands.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    /// The type OID the server reported for a column (`PQftype`): 20 int8, 21 int2, 23 int4,
    /// 17 bytea, 25 text, 16 bool, …; the numbers are fixed in PostgreSQL's `pg_type` catalog.
    public func typeOID(_ column: Int) -> UInt32 {
        precondition(column >= 0 && column < columnNames.count, "column out of range")
        return UInt32(PQftype(result, Int32(column)))
    }

    /// Whether the value is SQL NULL.
    public func isNull(_ row: Int, _ column: Int) -> Bool {
        precondition(row >= 0 && row < count && column >= 0 && column < columnNames.count, "row or column out of range")
        return PQgetisnull(result, Int32(row), Int32(column)) == 1
    }

    /// The value as text (any column type).
    public func string(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column) else { return nil }
        // The value lives inside the result; it is copied into the String.
        return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    /// The value of an integer column (int2, int4, int8, oid).
    public func int64(_ row: Int, _ column: Int) throws(PostgresError) -> Int64? {
        guard let text = string(row, column) else { return nil }
        guard let value = Int64(text) else { throw mismatch(column, expected: "an integer") }
        return value
    }

    /// The value of a boolean column.
    public func bool(_ row: Int, _ column: Int) throws(PostgresError) -> Bool? {
        switch string(row, column) {
        case nil: return nil
        case "t": return true
        case "f": return false
        default: throw mismatch(column, expected: "a boolean")
        }
    }

    /// The value of a bytea column (the hex output format, `\x…`, which connections select).
    public func bytes(_ row: Int, _ column: Int) throws(PostgresError) -> [UInt8]? {
        guard !isNull(row, column) else { return nil }
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        // The value lives inside the result; hexDecoded copies what it decodes.
        let decoded = PQgetvalue(result, Int32(row), Int32(column)).withMemoryRebound(to: UInt8.self, capacity: length)
        {
            Self.hexDecoded(UnsafeBufferPointer(start: $0, count: length))
        }
        guard let decoded else { throw mismatch(column, expected: "bytea in hex format") }
        return decoded
    }

    /// The index of the column named `name`.
    public func column(named name: String) throws(PostgresError) -> Int {
        guard let index = columnNames.firstIndex(of: name) else {
            throw PostgresError(code: .decoding, message: "no column named \"\(name)\" in \(columnNames)")
        }
        return index
    }

    /// `isNull` of the column named `column`; throws `.decoding` when there is none.
    public func isNull(_ row: Int, _ column: String) throws(PostgresError) -> Bool {
        isNull(row, try self.column(named: column))
    }
    /// `string` of the column named `column`; throws `.decoding` when there is none.
    public func string(_ row: Int, _ column: String) throws(PostgresError) -> String? {
        string(row, try self.column(named: column))
    }
    /// `int64` of the column named `column`; throws `.decoding` when there is none.
    public func int64(_ row: Int, _ column: String) throws(PostgresError) -> Int64? {
        try int64(row, try self.column(named: column))
    }
    /// `bool` of the column named `column`; throws `.decoding` when there is none.
    public func bool(_ row: Int, _ column: String) throws(PostgresError) -> Bool? {
        try bool(row, try self.column(named: column))
    }
    /// `bytes` of the column named `column`; throws `.decoding` when there is none.
    public func bytes(_ row: Int, _ column: String) throws(PostgresError) -> [UInt8]? {
        try bytes(row, try self.column(named: column))
    }

    private func mismatch(_ column: Int, expected: String) -> PostgresError {
        PostgresError(code: .decoding, message: "column \"\(columnNames[column])\" does not hold \(expected)")
    }

    /// Decodes `\x` followed by pairs of hex digits; nil for anything else.
    private static func hexDecoded(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count >= 2, text.count % 2 == 0, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else {
            return nil
        }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2 - 1)
        for i in stride(from: 2, to: text.count, by: 2) {
            guard let high = nibble(text[i]), let low = nibble(text[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
