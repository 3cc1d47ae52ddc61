import PostgreSQL
import Testing

@Suite("PostgreSQL pipeline", TestDatabase.required)
struct PostgresPipelineTests {
    @Test("statements sent together run in order and each result comes back in its place")
    func inOrder() async throws {
        try await TestDatabase.withSchema { db, schema in
            try db.execute("CREATE TABLE \(schema).p (n int8 PRIMARY KEY)")
            let results = try db.pipeline([
                .init("BEGIN"), .init("INSERT INTO \(schema).p VALUES ($1)", [.int(1)], prepared: true),
                .init("INSERT INTO \(schema).p VALUES ($1)", [.int(2)], prepared: true),
                .init("SELECT count(*) AS n FROM \(schema).p", prepared: true), .init("COMMIT"),
            ])
            #expect(results.map(\.commandTag) == ["BEGIN", "INSERT 0 1", "INSERT 0 1", "SELECT 1", "COMMIT"])
            #expect(try results[3].int64(0, "n") == 2)
            #expect(!db.isInTransaction)
            // The prepared statements stay prepared: a second pipeline reuses them.
            let prepared = try db.execute("SELECT count(*) AS n FROM pg_prepared_statements").int64(0, "n")
            let again = try db.pipeline([
                .init("INSERT INTO \(schema).p VALUES ($1)", [.int(3)], prepared: true),
                .init("SELECT count(*) AS n FROM \(schema).p", prepared: true),
            ])
            #expect(try again[1].int64(0, "n") == 3)
            #expect(try db.execute("SELECT count(*) AS n FROM pg_prepared_statements").int64(0, "n") == prepared)
        }
    }

    @Test("the first failure is thrown, the statements after it do not run, and the session stays usable")
    func failure() async throws {
        try await TestDatabase.withSchema { db, schema in
            try db.execute("CREATE TABLE \(schema).p (n int8 PRIMARY KEY)")
            #expect {
                _ = try db.pipeline([
                    .init("BEGIN"), .init("INSERT INTO \(schema).p VALUES (1)"),
                    .init("INSERT INTO \(schema).p VALUES (1)"), .init("INSERT INTO \(schema).p VALUES (2)"),
                    .init("COMMIT"),
                ])
            } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
            // COMMIT did not run: the aborted transaction is still open until rolled back.
            #expect(db.isInTransaction)
            try db.execute("ROLLBACK")
            #expect(try db.execute("SELECT count(*) AS n FROM \(schema).p").int64(0, "n") == 0)
        }
    }
}
