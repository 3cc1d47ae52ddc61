import Foundation
import PostgreSQL
import Testing

/// The server the tests run against: `LEDGER_TEST_POSTGRES_URL`, which scripts/run-tests sets
/// after starting one with scripts/postgres-test-server.
enum TestDatabase {
    static let url: String? = ProcessInfo.processInfo.environment["LEDGER_TEST_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// Skips a suite when no server is configured, and says how to get one.
    static let required = Testing.ConditionTrait.enabled(
        if: url != nil,
        "LEDGER_TEST_POSTGRES_URL is not set; scripts/run-tests starts a server and sets it")

    /// A pool on the test server.
    static func pool(size: Int, statementTimeout: Duration? = nil) throws -> PostgresPool {
        try PostgresPool(url: try #require(url), size: size, statementTimeout: statementTimeout)
    }

    /// Runs `body` on one connection inside a schema of its own, dropped afterwards, so tests can
    /// run in parallel.
    static func withSchema<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection, _ schema: String) throws -> T
    ) async throws -> T {
        let pool = try pool(size: 1)
        defer { pool.close() }
        let schema = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        return try await pool.withConnection { db in
            try db.execute("CREATE SCHEMA \(schema)")
            defer { _ = try? db.execute("DROP SCHEMA \(schema) CASCADE") }
            return try body(db, schema)
        }
    }
}
