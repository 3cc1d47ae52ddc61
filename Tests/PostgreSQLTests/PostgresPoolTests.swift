import Dispatch
import PostgreSQL
import Synchronization
import Testing

@Suite("PostgreSQL pool", TestDatabase.required)
struct PostgresPoolTests {
    /// How many bodies run at once, and the most that ever did.
    final class Gauge: Sendable {
        let current = Atomic(0)
        let peak = Atomic(0)

        func enter() { peak.max(current.add(1, ordering: .relaxed).newValue, ordering: .relaxed) }
        func leave() { current.subtract(1, ordering: .relaxed) }
    }

    @Test("a pool of 2 runs at most 2 bodies at once and completes all 10 calls")
    func boundsConcurrency() async throws {
        let pool = try TestDatabase.pool(size: 2)
        defer { pool.close() }
        let gauge = Gauge()
        let pids = try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await pool.withConnection { db in
                        gauge.enter()
                        defer { gauge.leave() }
                        _ = try db.execute("SELECT pg_sleep(0.05)")
                        return try #require(try db.execute("SELECT pg_backend_pid()").int64(0, 0))
                    }
                }
            }
            return try await group.reduce(into: [Int64]()) { $0.append($1) }
        }
        #expect(pids.count == 10)
        #expect((1...2).contains(gauge.peak.load(ordering: .relaxed)))
        #expect(Set(pids).count <= 2)
    }

    @Test("the advisory-lock example in PostgresConnection's docs runs as written, 20 times concurrently")
    func advisoryLockExample() async throws {
        let pool = try TestDatabase.pool(size: 4)
        defer { pool.close() }
        let schema = "test_advisory_\(UInt32.random(in: 0...UInt32.max))"
        try await pool.withConnection { db in
            try db.execute("CREATE SCHEMA \(schema)")
            try db.execute("CREATE TABLE \(schema).balance (id int8 PRIMARY KEY, cents int8 NOT NULL)")
            try db.execute("INSERT INTO \(schema).balance VALUES (42, 0)")
            try db.execute("SET search_path = \(schema)")
        }
        let (accountID, cents): (Int64, Int64) = (42, 5)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    let updated = try await pool.withConnection { db in
                        try db.execute("SET search_path = \(schema)")
                        return try db.transaction { db in
                            _ = try db.execute("SELECT pg_advisory_xact_lock($1)", [.int(accountID)])
                            let update = "UPDATE balance SET cents = cents + $2 WHERE id = $1"
                            return try db.executePrepared(update, [.int(accountID), .int(cents)]).affectedRows
                        }
                    }
                    #expect(updated == 1)
                }
            }
            try await group.waitForAll()
        }
        let total = try await pool.withConnection { db in
            defer { _ = try? db.execute("DROP SCHEMA \(schema) CASCADE") }
            return try db.execute("SELECT cents FROM \(schema).balance WHERE id = 42").int64(0, 0)
        }
        #expect(total == 100)
    }

    @Test("a connection that broke is replaced on the next call")
    func replacesBrokenConnection() async throws {
        let pool = try TestDatabase.pool(size: 1)
        defer { pool.close() }
        let first = try await pool.withConnection { db in try db.execute("SELECT pg_backend_pid()").int64(0, 0) }
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { db in try db.execute("SELECT pg_terminate_backend(pg_backend_pid())") }
        }
        #expect(error?.isConnectionFailure == true)
        let second = try await pool.withConnection { db in try db.execute("SELECT pg_backend_pid()").int64(0, 0) }
        #expect(first != nil && second != nil && first != second)
    }

    @Test("a connection left inside a transaction is not handed out again")
    func dropsConnectionLeftInTransaction() async throws {
        let pool = try TestDatabase.pool(size: 1)
        defer { pool.close() }
        let first = try await pool.withConnection { db in
            try db.execute("BEGIN")
            return try db.execute("SELECT pg_backend_pid()").int64(0, 0)
        }
        let (second, inTransaction) = try await pool.withConnection { db in
            (try db.execute("SELECT pg_backend_pid()").int64(0, 0), db.isInTransaction)
        }
        #expect(first != second)
        #expect(!inTransaction)
    }

    @Test("a caller cancelled while waiting gets CancellationError and does not take the connection")
    func cancelledWaiter() async throws {
        let pool = try TestDatabase.pool(size: 1)
        defer { pool.close() }
        let release = DispatchSemaphore(value: 0)
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await pool.withConnection { _ in
                startedContinuation.yield()
                // Holds the only connection on the pool's own thread until the test lets go.
                release.wait()
            }
        }
        for await _ in started { break }
        let waiter = Task { try await pool.withConnection { _ in "got a connection" } }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        release.signal()
        try await holder.value
        #expect(try await pool.withConnection { db in try db.execute("SELECT 1").int64(0, 0) } == 1)
    }

    @Test("a closed pool refuses calls")
    func closed() async throws {
        let pool = try TestDatabase.pool(size: 1)
        _ = try await pool.withConnection { db in try db.execute("SELECT 1") }
        pool.close()
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { db in try db.execute("SELECT 1") }
        }
        #expect(error?.code == .poolClosed)
    }
}
