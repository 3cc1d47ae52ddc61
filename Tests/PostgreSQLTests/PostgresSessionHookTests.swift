import Foundation
import PostgreSQL
import Testing

@Suite("PostgreSQL onConnect hook and column types", TestDatabase.required)
struct PostgresSessionHookTests {
    @Test("onConnect runs on every pooled connection and again after reset")
    func onConnectRunsOnEverySession() async throws {
        let url = try #require(TestDatabase.url)
        let setting: PostgresConnection.OnConnect = { connection throws(PostgresError) in
            _ = try connection.execute("SET application_name = 'hooked'")
        }
        let pool = try PostgresPool(url: url, size: 1, onConnect: setting)
        defer { pool.close() }
        let first = try await pool.withConnection { db in try db.execute("SHOW application_name").string(0, 0) }
        #expect(first == "hooked")
        // The pool replaces a terminated connection; the new one runs the hook too.
        _ = try? await pool.withConnection { db in try db.execute("SELECT pg_terminate_backend(pg_backend_pid())") }
        let second = try await pool.withConnection { db in try db.execute("SHOW application_name").string(0, 0) }
        #expect(second == "hooked")

        let connection = try PostgresConnection(url: url, onConnect: setting)
        try connection.execute("SET application_name = 'changed'")
        try connection.reset()
        #expect(try connection.execute("SHOW application_name").string(0, 0) == "hooked")
    }

    @Test("a failing onConnect fails the connect with its error")
    func failingOnConnect() throws {
        let url = try #require(TestDatabase.url)
        let error = #expect(throws: PostgresError.self) {
            try PostgresConnection(url: url) { connection throws(PostgresError) in
                _ = try connection.execute("SET no_such_setting = 1")
            }
        }
        #expect(error?.sqlState == "42704")
    }

    @Test("typeOID reports each column's type from pg_type")
    func typeOIDs() throws {
        let connection = try PostgresConnection(url: try #require(TestDatabase.url))
        let rows = try connection.execute(
            "SELECT 1::int2, 1::int4, 1::int8, 'x'::text, '\\x00'::bytea, true, NULL::int8, 1.5::numeric")
        #expect(rows.columnNames.indices.map(rows.typeOID) == [21, 23, 20, 25, 17, 16, 20, 1700])
    }
}
