import Foundation
import LedgerService
import Observability
import PostgreSQL
import SQLite
import Testing

@Suite("Group commit")
struct GroupCommitTests {
    struct Failure: Error {}

    static func isDuplicate(_ error: any Error) -> Bool {
        if let error = error as? PostgresError { return error.isUniqueViolation }
        if let error = error as? SQLiteError { return error.message.contains("UNIQUE") }
        return false
    }

    @Test(
        "a write that throws, or whose statement fails, is rolled back alone; the others commit and are counted",
        arguments: LedgerEngine.available)
    func failingWriteRolledBackAlone(engine: LedgerEngine) async throws {
        let counters = CommitCounters()
        let (database, remove) = try await engine.open(counters: counters)
        defer { remove() }
        _ = try await database.write { tx in
            try tx.query("CREATE TABLE items (id BIGINT PRIMARY KEY)")
            try tx.query("INSERT INTO items (id) VALUES (1000)")
        }
        let outcomes = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for id in 0..<50 {
                group.addTask {
                    do {
                        try await database.write { tx in
                            try tx.query("INSERT INTO items (id) VALUES ($1)", [.int(Int64(id))])
                            if id == 10 { throw Failure() }
                            // On PostgreSQL a failed statement aborts the transaction until the
                            // savepoint is rolled back.
                            if id == 20 { try tx.query("INSERT INTO items (id) VALUES (1000)") }
                        }
                        return (id, "ok")
                    } catch is Failure {
                        return (id, "thrown")
                    } catch {
                        return (id, Self.isDuplicate(error) ? "duplicate" : "\(error)")
                    }
                }
            }
            return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
        }
        var expected = Dictionary(uniqueKeysWithValues: (0..<50).map { ($0, "ok") })
        expected[10] = "thrown"
        expected[20] = "duplicate"
        #expect(outcomes == expected)
        let ids = try await database.read { tx in try tx.query("SELECT id FROM items ORDER BY id") }
        let kept: [Int64] = (0..<50).filter { $0 != 10 && $0 != 20 } + [1000]
        #expect(ids.rows == kept.map { [.int($0)] })
        #expect(counters.writes.value == 49)
        #expect(counters.failures.value == 0)
        await database.close()
    }
}
