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

    /// A database on `engine` with a table `items` holding the id 1000.
    static func openWithItem(_ engine: LedgerEngine, counters: CommitCounters) async throws -> (
        any LedgerDatabase, () -> Void
    ) {
        let (database, remove) = try await engine.open(counters: counters)
        _ = try await database.write { tx in
            try tx.query("CREATE TABLE items (id BIGINT PRIMARY KEY)")
            try tx.query("INSERT INTO items (id) VALUES (1000)")
        }
        return (database, remove)
    }

    /// Gives `database` a write that holds the writer until the returned gate is signalled, and
    /// returns once the writer runs it: the writes given next form one batch, in their order.
    static func holdWriter(_ database: any LedgerDatabase) async -> DispatchSemaphore {
        let gate = DispatchSemaphore(value: 0)
        let holding = AsyncStream<Void>.makeStream()
        database.write(
            { _ in
                holding.continuation.yield()
                gate.wait()
                gate.signal()  // open for good, should the body run again
            }, completion: { _ in })
        var held = holding.stream.makeAsyncIterator()
        _ = await held.next()
        return gate
    }

    @Test(
        "a write that throws, or whose statement fails, is rolled back alone; the others commit and are counted",
        arguments: LedgerEngine.available)
    func failingWriteRolledBackAlone(engine: LedgerEngine) async throws {
        let counters = CommitCounters()
        let (database, remove) = try await Self.openWithItem(engine, counters: counters)
        defer { remove() }
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

    @Test(
        "a write that throws before any statement, first in its batch, leaves the batch's transaction and position lock to the next",
        arguments: LedgerEngine.available)
    func throwsBeforeAnyStatement(engine: LedgerEngine) async throws {
        let (database, remove) = try await engine.open()
        defer { remove() }
        _ = try await database.write { tx in try tx.query("CREATE TABLE items (id BIGINT PRIMARY KEY)") }
        // A write holds the writer, so the two after it are one batch: the first throws at once,
        // so the batch is retried job by job, and the second then writes.
        let gate = await Self.holdWriter(database)
        let first = AsyncStream<Result<Int64, any Error>>.makeStream()
        let second = AsyncStream<Result<Int64, any Error>>.makeStream()
        database.write({ _ -> Int64 in throw Failure() }, completion: { first.continuation.yield($0) })
        let postgres = engine == .postgres
        database.write(
            { tx -> Int64 in
                try tx.query("INSERT INTO items (id) VALUES (1)")
                guard postgres else { return 1 }
                // Inside the batch's transaction, holding its position lock.
                let locks = try tx.query(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()")
                guard case .int(let count) = locks.rows[0][0] else { return -1 }
                return count
            }, completion: { second.continuation.yield($0) })
        gate.signal()
        var firstResults = first.stream.makeAsyncIterator()
        var secondResults = second.stream.makeAsyncIterator()
        let thrown = try #require(await firstResults.next())
        #expect(throws: Failure.self) { try thrown.get() }
        let written = try #require(await secondResults.next())
        #expect(try written.get() == 1)
        let ids = try await database.read { tx in try tx.query("SELECT id FROM items") }
        #expect(ids.rows == [[.int(1)]])
        await database.close()
    }

    @Test(
        "a held-back statement that fails is its own write's error, whether it surfaces in a later write or at the commit",
        arguments: LedgerEngine.available)
    func heldBackStatementFails(engine: LedgerEngine) async throws {
        let counters = CommitCounters()
        let (database, remove) = try await Self.openWithItem(engine, counters: counters)
        defer { remove() }
        let before = (writes: counters.writes.value, commits: counters.commits.value)
        /// Gives each write in order while the writer is held, then the outcome of each.
        func batch(_ writes: [@Sendable (any LedgerTransaction) throws -> Void]) async -> [String] {
            let gate = await Self.holdWriter(database)
            let results = AsyncStream<(Int, String)>.makeStream()
            for (index, write) in writes.enumerated() {
                database.write(write) { result in
                    switch result {
                    case .success: results.continuation.yield((index, "ok"))
                    case .failure(let error):
                        results.continuation.yield((index, Self.isDuplicate(error) ? "duplicate" : "\(error)"))
                    }
                }
            }
            gate.signal()
            var outcomes = [String](repeating: "", count: writes.count)
            var iterator = results.stream.makeAsyncIterator()
            for _ in writes.indices {
                guard let (index, outcome) = await iterator.next() else { break }
                outcomes[index] = outcome
            }
            return outcomes
        }
        func insert(_ id: Int64) -> @Sendable (any LedgerTransaction) throws -> Void {
            { tx in try tx.enqueue("INSERT INTO items (id) VALUES ($1)", [.int(id)]) }
        }
        // The duplicate goes out with the next write's read (PostgreSQL holds it back until then).
        let middle = await batch([
            insert(1), insert(1000),
            { tx in
                _ = try tx.query("SELECT count(*) FROM items")
                try tx.enqueue("INSERT INTO items (id) VALUES (2)", [])
            },
        ])
        #expect(middle == ["ok", "duplicate", "ok"])
        // The duplicate goes out with the commit.
        #expect(await batch([insert(3), insert(4), insert(1000)]) == ["ok", "ok", "duplicate"])
        // Alone in its batch.
        #expect(await batch([insert(1000)]) == ["duplicate"])
        let ids = try await database.read { tx in try tx.query("SELECT id FROM items ORDER BY id") }
        #expect(ids.rows == ([1, 2, 3, 4, 1000] as [Int64]).map { [.int($0)] })
        // Each hold is a write of its own that commits (three), then the four that did; the
        // duplicates never count.
        #expect(counters.writes.value - before.writes == 3 + 4)
        #expect(counters.commits.value - before.commits == 3 + 2)
        #expect(counters.failures.value == 0)
        await database.close()
    }
}
