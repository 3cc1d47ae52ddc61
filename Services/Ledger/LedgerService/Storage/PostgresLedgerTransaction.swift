import PostgreSQL

/// Adapts a PostgreSQL connection inside a transaction: `SQLValue`s become `PostgresValue`s, and
/// result columns become `SQLValue`s by their type (int2/int4/int8 → `.int`, bytea → `.blob`,
/// anything else → `.text`, NULL → `.null`).
///
/// With `prepares`, statements run as prepared statements (the ledger's SQL texts repeat), except
/// the transaction control the group committer sends (`SAVEPOINT`, `RELEASE`, `ROLLBACK`, `BEGIN`,
/// `COMMIT`), which runs as plain statements.
struct PostgresLedgerTransaction: LedgerTransaction {
    let connection: PostgresConnection
    let prepares: Bool
    let batch = TransactionBatch()

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> SQLRows {
        let values = parameters.map(Self.convert)
        let rows =
            prepares && !Self.isTransactionControl(sql)
            ? try connection.executePrepared(sql, values) : try connection.execute(sql, values)
        return try Self.convert(rows)
    }

    static func isTransactionControl(_ sql: String) -> Bool {
        ["SAVEPOINT ", "RELEASE ", "ROLLBACK", "BEGIN", "COMMIT"].contains { sql.hasPrefix($0) }
    }

    static func convert(_ value: SQLValue) -> PostgresValue {
        switch value {
        case .int(let value): .int(value)
        case .text(let value): .text(value)
        case .blob(let value): .bytes(value)
        case .null: .null
        }
    }

    /// Type OIDs from PostgreSQL's `pg_type` catalog.
    private static let int8OID: UInt32 = 20
    private static let int2OID: UInt32 = 21
    private static let int4OID: UInt32 = 23
    private static let byteaOID: UInt32 = 17

    /// Copies every value out of `rows`; `affected` counts rows only for INSERT, UPDATE, DELETE
    /// and MERGE (a SELECT's tag counts the rows it returned).
    static func convert(_ rows: PostgresRows) throws(PostgresError) -> SQLRows {
        let types = rows.columnNames.indices.map(rows.typeOID)
        var values: [[SQLValue]] = []
        values.reserveCapacity(rows.count)
        for row in 0..<rows.count {
            var record: [SQLValue] = []
            record.reserveCapacity(types.count)
            for (column, type) in types.enumerated() {
                guard !rows.isNull(row, column) else {
                    record.append(.null)
                    continue
                }
                switch type {
                case int8OID, int2OID, int4OID: record.append(.int(try rows.int64(row, column) ?? 0))
                case byteaOID: record.append(.blob(try rows.bytes(row, column) ?? []))
                default: record.append(.text(rows.string(row, column) ?? ""))
                }
            }
            values.append(record)
        }
        let tag = rows.commandTag
        let modifies = ["INSERT ", "UPDATE ", "DELETE ", "MERGE "].contains { tag.hasPrefix($0) }
        return SQLRows(columns: rows.columnNames, rows: values, affected: modifies ? rows.affectedRows : 0)
    }
}
