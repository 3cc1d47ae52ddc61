import Foundation
import LedgerService
import PostgreSQL
import Testing

/// The test server's URL, when scripts/run-tests (or the caller) set one.
private let postgresTestURL: String? = ProcessInfo.processInfo.environment["LEDGER_TEST_POSTGRES_URL"].flatMap {
    $0.isEmpty ? nil : $0
}

@Suite(
    "PostgreSQL ledger database",
    .enabled(
        if: postgresTestURL != nil,
        "LEDGER_TEST_POSTGRES_URL is not set; scripts/run-tests starts a server and sets it"))
struct PostgresLedgerDatabaseTests {
    static var url: String? { postgresTestURL }

    struct Failure: Error, Equatable {}

    /// A fresh schema name, so tests run in parallel without seeing each other's tables.
    static func freshSchema() -> String {
        "t_pgledger_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// A plain connection working in `schema`, for what the test does beside the engine.
    static func connection(schema: String) throws -> PostgresConnection {
        let setPath = "SET search_path TO \(schema)"
        return try PostgresConnection(url: try #require(url)) { connection throws(PostgresError) in
            _ = try connection.execute(setPath)
        }
    }

    /// Runs `body` with a database in a schema of its own (holding `items (id, note)`), then
    /// closes it and drops the schema.
    func withDatabase<T>(
        maxBatch: Int = 256, _ body: (PostgresLedgerDatabase, _ schema: String) async throws -> T
    ) async throws -> T {
        let schema = Self.freshSchema()
        let database = try PostgresLedgerDatabase(url: try #require(Self.url), maxBatch: maxBatch, schema: schema)
        defer { _ = try? Self.connection(schema: schema).execute("DROP SCHEMA \(schema) CASCADE") }
        _ = try await database.write { tx in
            try tx.query("CREATE TABLE items (id BIGINT PRIMARY KEY, note TEXT)")
        }
        do {
            let value = try await body(database, schema)
            await database.close()
            return value
        } catch {
            await database.close()
            throw error
        }
    }

    @Test("100 concurrent writes, one row each, all commit and are all read back")
    func groupCommit() async throws {
        try await withDatabase { database, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in 0..<100 {
                    group.addTask {
                        _ = try await database.write { tx in
                            try tx.query(
                                "INSERT INTO items (id, note) VALUES ($1, $2)", [.int(Int64(id)), .text("n\(id)")])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await database.read { tx in try tx.query("SELECT id, note FROM items ORDER BY id") }
            let expected: [[SQLValue]] = (0..<100).map { [.int(Int64($0)), .text("n\($0)")] }
            #expect(rows.rows == expected)
        }
    }

    @Test("a read sees one snapshot: a row committed during the read appears only in the next read")
    func readSnapshot() async throws {
        try await withDatabase { database, schema in
            let other = try Self.connection(schema: schema)
            let (before, after) = try await database.read { tx in
                let before = try tx.query("SELECT count(*) AS n FROM items").int(0, "n")
                try other.execute("INSERT INTO items (id) VALUES (1)")  // commits on its own
                let after = try tx.query("SELECT count(*) AS n FROM items").int(0, "n")
                return (before, after)
            }
            #expect(before == 0 && after == 0)
            let later = try await database.read { tx in try tx.query("SELECT count(*) AS n FROM items").int(0, "n") }
            #expect(later == 1)
            let error = await #expect(throws: PostgresError.self) {
                try await database.read { tx in try tx.query("INSERT INTO items (id) VALUES (2)") }
            }
            #expect(error?.sqlState == "25006")  // read_only_sql_transaction
        }
    }

    @Test("4 instances migrating a fresh schema at once apply each migration exactly once")
    func concurrentMigrate() async throws {
        let url = try #require(Self.url)
        let schema = Self.freshSchema()
        defer { _ = try? Self.connection(schema: schema).execute("DROP SCHEMA \(schema) CASCADE") }
        let databases = try (0..<4).map { _ in try PostgresLedgerDatabase(url: url, poolSize: 1, schema: schema) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for database in databases { group.addTask { try await database.migrate() } }
            try await group.waitForAll()
        }
        try await databases[0].migrate()  // already current: changes nothing
        let versions = try await databases[1].read { tx in
            try tx.query("SELECT version FROM schema_migrations ORDER BY version").rows
        }
        #expect(versions == (1...9).map { [.int($0)] })
        let tables = try await databases[2].read { tx in
            try tx.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
                [.text(schema)]
            ).rows
        }
        let names = [
            "access_state", "changes", "cursors", "event_log", "events", "idempotency", "inbox", "leases", "links",
            "period_lookup", "periods", "schema_migrations", "state_facts", "subscriptions", "webhook_attempts",
            "webhook_state",
        ]
        #expect(tables == names.map { [.text($0)] })
        for database in databases { await database.close() }
    }

    @Test("ints, text, blobs and NULL come back as the values sent, typed by column")
    func valueRoundTrips() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write { tx in
                try tx.query("CREATE TABLE v (id BIGINT PRIMARY KEY, i BIGINT, t TEXT, b BYTEA, s INT2, n INT4)")
            }
            let rows: [[SQLValue]] = [
                [
                    .int(1), .int(.min), .text("grüße ✓ 'q' \"d\""), .blob(Array(0...255)), .int(-32768),
                    .int(.init(Int32.max)),
                ],
                [.int(2), .int(.max), .text(""), .blob([]), .int(32767), .int(.init(Int32.min))],
                [.int(3), .null, .null, .null, .null, .null],
            ]
            for row in rows {
                let inserted = try await database.write { tx in
                    try tx.query("INSERT INTO v (id, i, t, b, s, n) VALUES ($1, $2, $3, $4, $5, $6)", row)
                }
                #expect(inserted.affected == 1)
            }
            let read = try await database.read { tx in try tx.query("SELECT id, i, t, b, s, n FROM v ORDER BY id") }
            #expect(read.columns == ["id", "i", "t", "b", "s", "n"])
            #expect(read.rows == rows)
            #expect(read.affected == 0)
            let updated = try await database.write { tx in
                try tx.query("UPDATE v SET t = $1 WHERE id < 3", [.text("x")])
            }
            #expect(updated.affected == 2)
            let other = try await database.read { tx in
                try tx.query("SELECT true AS flag, 1.5::numeric AS num, $1::bytea AS b", [.blob([0, 0xff])]).rows
            }
            #expect(other == [[.text("t"), .text("1.5"), .blob([0, 0xff])]])
        }
    }

    @Test("after the writer connection is terminated the next write fails and the one after succeeds")
    func brokenWriterReconnects() async throws {
        try await withDatabase { database, schema in
            let pid = try await database.write { tx in try tx.query("SELECT pg_backend_pid() AS pid").int(0, "pid") }
            let other = try Self.connection(schema: schema)
            // The timeout makes the call wait until the backend has exited.
            let terminated = try other.execute("SELECT pg_terminate_backend($1::int, 10000)", [.int(try #require(pid))])
            #expect(try terminated.bool(0, 0) == true)
            let error = await #expect(throws: PostgresError.self) {
                try await database.write { tx in try tx.query("INSERT INTO items (id) VALUES (1)") }
            }
            #expect(error?.isConnectionFailure == true)
            let newPID = try await database.write { tx in
                try tx.query("INSERT INTO items (id) VALUES (2)")
                return try tx.query("SELECT pg_backend_pid() AS pid").int(0, "pid")
            }
            #expect(newPID != nil && newPID != pid)
            let ids = try await database.read { tx in try tx.query("SELECT id FROM items ORDER BY id").rows }
            #expect(ids == [[.int(2)]])
        }
    }

    @Test("a closed database refuses writes, reads and migrate")
    func closed() async throws {
        let schema = Self.freshSchema()
        defer { _ = try? Self.connection(schema: schema).execute("DROP SCHEMA \(schema) CASCADE") }
        let database = try PostgresLedgerDatabase(url: try #require(Self.url), schema: schema)
        await database.close()
        await #expect(throws: LedgerStorageError.self) { try await database.write { tx in try tx.query("SELECT 1") } }
        await #expect(throws: LedgerStorageError.self) { try await database.read { tx in try tx.query("SELECT 1") } }
        await #expect(throws: LedgerStorageError.self) { try await database.migrate() }
    }

    @Test("an unreachable server fails init with an error that leaves out the password")
    func errorHidesPassword() throws {
        let error = #expect(throws: PostgresError.self) {
            try PostgresLedgerDatabase(url: "postgresql://ledger:s3cr3t-pw@127.0.0.1:1/ledger?connect_timeout=2")
        }
        #expect(error?.code == .connection)
        #expect(error.map { !"\($0)".contains("s3cr3t-pw") } == true)
    }
}
