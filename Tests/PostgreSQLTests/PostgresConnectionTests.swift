import PostgreSQL
import Testing

@Suite("PostgreSQL connection", TestDatabase.required)
struct PostgresConnectionTests {
    static let values: [PostgresValue] = [
        .text("plain"), .text("ünïcødé ✓ 日本語 🐘"), .text(""), .int(.min), .int(0), .int(.max),
        .bytes([0, 1, 0, 0xff, 0]), .bytes([]), .bool(true), .bool(false), .null,
    ]

    @Test("every kind of value is stored as sent and read back", arguments: values)
    func roundTrip(value: PostgresValue) async throws {
        try await TestDatabase.withSchema { db, schema in
            try db.execute("CREATE TABLE \(schema).v (t text, i int8, b bytea, f boolean)")
            let column =
                switch value {
                case .text: "t"
                case .int: "i"
                case .bytes: "b"
                case .bool: "f"
                case .null: "t"
                }
            let insert = try db.execute("INSERT INTO \(schema).v (\(column)) VALUES ($1)", [value])
            #expect(insert.affectedRows == 1)
            let rows = try db.execute(
                "SELECT t, i, b, f, char_length(t) AS chars, octet_length(b) AS octets FROM \(schema).v")
            try #require(rows.count == 1)
            #expect(rows.columnNames == ["t", "i", "b", "f", "chars", "octets"])
            switch value {
            case .text(let text):
                #expect(try rows.string(0, "t") == text)
                #expect(try rows.int64(0, "chars") == Int64(text.unicodeScalars.count))
            case .int(let int):
                #expect(try rows.int64(0, "i") == int)
            case .bytes(let bytes):
                #expect(try rows.bytes(0, "b") == bytes)
                #expect(try rows.int64(0, "octets") == Int64(bytes.count))
            case .bool(let bool):
                #expect(try rows.bool(0, "f") == bool)
            case .null:
                #expect((0..<4).allSatisfy { rows.isNull(0, $0) })
            }
        }
    }

    @Test("NULL parameters and columns read as nil through every getter")
    func nulls() async throws {
        try await TestDatabase.withSchema { db, _ in
            let rows = try db.execute(
                "SELECT $1::text AS t, $2::int8 AS i, $3::bytea AS b, $4::bool AS f", [.null, .null, .null, .null])
            #expect(try rows.isNull(0, "t") && rows.isNull(0, "i") && rows.isNull(0, "b") && rows.isNull(0, "f"))
            #expect(try rows.string(0, "t") == nil)
            #expect(try rows.int64(0, "i") == nil)
            #expect(try rows.bytes(0, "b") == nil)
            #expect(try rows.bool(0, "f") == nil)
        }
    }

    @Test("a getter of the wrong type or an unknown column throws a decoding error")
    func decodingErrors() async throws {
        try await TestDatabase.withSchema { db, _ in
            let rows = try db.execute("SELECT 'abc'::text AS t")
            #expect(throws: PostgresError.self) { try rows.int64(0, "t") }
            #expect(throws: PostgresError.self) { try rows.bool(0, 0) }
            #expect(throws: PostgresError.self) { try rows.bytes(0, 0) }
            let error = #expect(throws: PostgresError.self) { try rows.string(0, "missing") }
            #expect(error?.code == .decoding)
        }
    }

    @Test("the same SQL run twice is prepared once on the connection")
    func preparedStatementReuse() async throws {
        try await TestDatabase.withSchema { db, schema in
            let sql = "SELECT $1::int8 + 1 AS n -- \(schema)"
            #expect(try db.executePrepared(sql, [.int(1)]).int64(0, "n") == 2)
            #expect(try db.executePrepared(sql, [.int(41)]).int64(0, "n") == 42)
            let prepared = try db.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", [.text(sql)])
            #expect(try prepared.int64(0, 0) == 1)
        }
    }

    @Test("past 256 distinct texts statements still run, unprepared, alone or in a pipeline")
    func preparedStatementLimit() async throws {
        try await TestDatabase.withSchema { db, schema in
            for index in 0..<300 {
                #expect(
                    try db.executePrepared("SELECT $1::int8 + \(index) AS n -- \(schema)", [.int(1)]).int64(0, "n")
                        == Int64(index + 1))
            }
            let pipelined = try db.pipeline([
                .init("SELECT $1::int8 + 1000 AS n -- \(schema)", [.int(1)], prepared: true),
                .init("SELECT $1::int8 + 5 AS n -- \(schema)", [.int(1)], prepared: true),
            ])
            #expect(try pipelined.map { try $0.int64(0, "n") } == [1001, 6])
            let prepared = try db.execute("SELECT count(*) FROM pg_prepared_statements").int64(0, 0)
            #expect(prepared == 256)
        }
    }

    @Test("reset reconnects, keeps the session settings and prepares statements again")
    func reset() async throws {
        try await TestDatabase.withSchema { db, schema in
            let sql = "SELECT 7 AS n -- \(schema)"
            let before = try db.execute("SELECT pg_backend_pid()").int64(0, 0)
            #expect(try db.executePrepared(sql).int64(0, "n") == 7)
            try db.reset()
            #expect(try db.execute("SELECT pg_backend_pid()").int64(0, 0) != before)
            #expect(try db.executePrepared(sql).int64(0, "n") == 7)
            #expect(try db.execute("SHOW synchronous_commit").string(0, 0) == "on")
        }
    }

    @Test("a transaction commits what its body did")
    func transactionCommits() async throws {
        try await TestDatabase.withSchema { db, schema in
            try db.execute("CREATE TABLE \(schema).t (id int8)")
            let inserted = try db.transaction { db in
                #expect(db.isInTransaction)
                return try db.execute("INSERT INTO \(schema).t VALUES ($1), ($2)", [.int(1), .int(2)]).affectedRows
            }
            #expect(inserted == 2)
            #expect(try db.execute("SELECT count(*) FROM \(schema).t").int64(0, 0) == 2)
        }
    }

    @Test("a transaction whose body throws is rolled back and the error passed on")
    func transactionRollsBack() async throws {
        struct Abandon: Error {}
        try await TestDatabase.withSchema { db, schema in
            try db.execute("CREATE TABLE \(schema).t (id int8)")
            #expect(throws: Abandon.self) {
                try db.transaction { db in
                    try db.execute("INSERT INTO \(schema).t VALUES (1)")
                    throw Abandon()
                }
            }
            #expect(try db.execute("SELECT count(*) FROM \(schema).t").int64(0, 0) == 0)
            #expect(!db.isInTransaction)
        }
    }

    @Test("a transaction whose body swallowed a failed statement throws instead of committing")
    func transactionAbortedInside() async throws {
        try await TestDatabase.withSchema { db, schema in
            try db.execute("CREATE TABLE \(schema).t (id int8)")
            let error = #expect(throws: PostgresError.self) {
                try db.transaction { db in
                    try db.execute("INSERT INTO \(schema).t VALUES (1)")
                    _ = try? db.execute("SELECT 1 / 0")
                }
            }
            #expect(error?.message.contains("rolled back") == true)
            #expect(try db.execute("SELECT count(*) FROM \(schema).t").int64(0, 0) == 0)
        }
    }

    @Test("a duplicate key is a unique violation (23505) whose text leaves out the row's values")
    func uniqueViolation() async throws {
        try await TestDatabase.withSchema { db, schema in
            try db.execute("CREATE TABLE \(schema).tokens (token text PRIMARY KEY)")
            try db.executePrepared("INSERT INTO \(schema).tokens VALUES ($1)", [.text("tok-8f3a1c")])
            let error = #expect(throws: PostgresError.self) {
                try db.executePrepared("INSERT INTO \(schema).tokens VALUES ($1)", [.text("tok-8f3a1c")])
            }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.sqlState == "23505")
            #expect(error?.code == .query)
            #expect(error?.isConnectionFailure == false)
            #expect(error?.message == "duplicate key value violates unique constraint \"tokens_pkey\"")
            #expect(error.map { !String(describing: $0).contains("tok-8f3a1c") } == true)
            #expect(db.isHealthy)
        }
    }

    @Test("a syntax error carries the server's message and SQLSTATE 42601; the connection stays usable")
    func syntaxError() async throws {
        try await TestDatabase.withSchema { db, _ in
            let error = #expect(throws: PostgresError.self) { try db.execute("SELEC 1") }
            #expect(error?.sqlState == "42601")
            #expect(error?.message == "syntax error at or near \"SELEC\"")
            #expect(error?.description == "postgres query failed [42601]: syntax error at or near \"SELEC\"")
            let afterwards = try db.execute("SELECT 1").int64(0, 0)
            #expect(afterwards == 1)
        }
    }

    @Test("a statement past the statement timeout is cancelled with SQLSTATE 57014")
    func statementTimeout() async throws {
        let pool = try TestDatabase.pool(size: 1, statementTimeout: .milliseconds(100))
        defer { pool.close() }
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { db in try db.execute("SELECT pg_sleep(10)") }
        }
        #expect(error?.sqlState == "57014")
    }

    @Test("text holding a NUL character is refused before it reaches the server")
    func nulInText() async throws {
        try await TestDatabase.withSchema { db, _ in
            let error = #expect(throws: PostgresError.self) { try db.execute("SELECT $1", [.text("a\u{0}b")]) }
            #expect(error?.message.contains("$1") == true)
        }
    }
}
