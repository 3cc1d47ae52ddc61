import PostgreSQL

/// Adapts a PostgreSQL connection inside a transaction: `SQLValue`s become `PostgresValue`s, and
/// result columns become `SQLValue`s by their type (int2/int4/int8 → `.int`, bytea → `.blob`,
/// anything else → `.text`, NULL → `.null`).
///
/// With `prepares`, statements run as prepared statements (the ledger's SQL texts repeat), except
/// the transaction control the group committer sends (`SAVEPOINT`, `RELEASE`, `ROLLBACK`, `BEGIN`,
/// `COMMIT`), which runs as plain statements.
///
/// Statements given to `enqueue` wait and go out with the next `query` or `flush` in one
/// pipeline: a write of several statements costs a round trip or two, not one per statement.
struct PostgresLedgerTransaction: LedgerTransaction {
    let connection: PostgresConnection
    let prepares: Bool
    let batch = TransactionBatch()
    private let pending = Pending()

    /// Statements held back until the next round trip.
    private final class Pending {
        var statements: [PostgresConnection.Statement] = []
    }

    init(connection: PostgresConnection, prepares: Bool) {
        self.connection = connection
        self.prepares = prepares
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> SQLRows {
        let statement = self.statement(sql, parameters)
        guard !pending.statements.isEmpty else {
            let rows =
                statement.prepared
                ? try connection.executePrepared(sql, statement.parameters)
                : try connection.execute(sql, statement.parameters)
            return try Self.convert(rows)
        }
        let statements = pending.statements + [statement]
        pending.statements = []
        let results = try connection.pipeline(statements)
        return try Self.convert(results[results.count - 1])
    }

    func enqueue(_ sql: String, _ parameters: [SQLValue]) throws {
        pending.statements.append(statement(sql, parameters))
    }

    func flush() throws {
        guard !pending.statements.isEmpty else { return }
        let statements = pending.statements
        pending.statements = []
        _ = try connection.pipeline(statements)
    }

    /// Sends what is held back and COMMIT, in one round trip. Throws when a statement failed
    /// (the server then answers COMMIT with ROLLBACK).
    func commit() throws {
        let statements = pending.statements + [PostgresConnection.Statement("COMMIT")]
        pending.statements = []
        let results = try connection.pipeline(statements)
        guard results.last?.commandTag == "COMMIT" else {
            throw PostgresError(code: .query, message: "COMMIT rolled back the transaction: a statement in it failed")
        }
    }

    func discardPending(from marker: String) -> Bool {
        guard let start = pending.statements.lastIndex(where: { $0.sql == marker }) else {
            discardAllPending()
            return false
        }
        pending.statements.removeSubrange(start...)
        return true
    }

    /// Drops everything held back (the transaction is being abandoned).
    func discardAllPending() { pending.statements = [] }

    private func statement(_ sql: String, _ parameters: [SQLValue]) -> PostgresConnection.Statement {
        PostgresConnection.Statement(
            sql, parameters.map(Self.convert), prepared: prepares && !Self.isTransactionControl(sql))
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
