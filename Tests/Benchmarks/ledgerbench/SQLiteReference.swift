import BenchSupport
import Foundation

/// The raw-SQLite reference: the `sqlite3` shell running a generated script on a fresh file
/// with the ledger's own schema, in WAL mode with synchronous=FULL (as Shared/SQLite opens the
/// ledger's connection), doing per row the inserts Ledger.recordVerifiedState does (the
/// subscription upsert, the event, the change, the idempotency row) in transactions of
/// `batch` rows, `BEGIN IMMEDIATE` … `COMMIT` like the ledger's writer.
struct SQLiteReference {
    let sqlite3: String
    /// The ledger's DDL, read from the file the ledger migrated.
    let schema: String
    let sizes: AppendWorkload.RowSizes
    let directory: TemporaryDirectory
    let flushes: DeviceFlushes?

    /// The `CREATE` statements of the ledger's database at `path` (SQLite's own tables left out).
    static func schema(sqlite3: String, path: String) throws(BenchError) -> String {
        let query =
            "SELECT sql || ';' FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        let result = try ChildProcess.runToCompletion(
            sqlite3, ["-batch", "-noheader", "-list", "-readonly", path, query], limit: .seconds(30))
        guard result.status == 0, result.output.contains("CREATE TABLE idempotency") else {
            throw BenchError("cannot read the ledger's schema from \(path):\n\(result.output.suffix(2000))")
        }
        return result.output
    }

    /// A short run to learn the rate, then one sized to last about `seconds`.
    func measure(batch: Int, seconds: Double, maxRows: Int = 2_000_000) throws(BenchError) -> ReferenceRun {
        let probe = try run(batch: batch, rows: batch * max(20, 200 / batch), label: "probe")
        let rows = min(maxRows, max(batch * 20, Int(probe.rowsPerSecond * seconds)))
        return try run(batch: batch, rows: rows - rows % batch, label: "run")
    }

    /// Inserts `rows` rows in transactions of `batch` on a fresh file; times the sqlite3 process.
    private func run(batch: Int, rows: Int, label: String) throws(BenchError) -> ReferenceRun {
        let database = directory.file("reference-\(label)-\(batch).sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) } }
        let schemaFile = try directory.write("schema.sql", schema)
        let created = try ChildProcess.runToCompletion(
            sqlite3, ["-batch", "-bail", database, ".read \(schemaFile)"], limit: .seconds(30))
        guard created.status == 0 else {
            throw BenchError("sqlite3 could not create the schema:\n\(created.output.suffix(2000))")
        }
        let scriptFile = try directory.write("inserts.sql", script(batch: batch, rows: rows))
        defer { try? FileManager.default.removeItem(atPath: scriptFile) }
        let flushesBefore = flushes?.count()
        let start = ContinuousClock.now
        let result = try ChildProcess.runToCompletion(
            sqlite3, ["-batch", "-bail", database, ".read \(scriptFile)"], limit: .seconds(600))
        let elapsed = ContinuousClock.now - start
        let flushesAfter = flushes?.count()
        guard result.status == 0, result.output.contains("wal") else {
            throw BenchError("sqlite3 failed on the reference script:\n\(result.output.suffix(2000))")
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var flushCount: Int?
        if let flushesBefore, let flushesAfter { flushCount = flushesAfter - flushesBefore }
        return ReferenceRun(
            tool: "sqlite3", batch: batch, clients: 1, rows: rows, seconds: seconds, flushes: flushCount)
    }

    /// The script: durability pragmas, then `rows / batch` transactions of `batch` rows. Blob
    /// contents come from randomblob() with the sizes the ledger stores.
    func script(batch: Int, rows: Int) -> String {
        let time = AppendWorkload.storeTime
        let hash = String(repeating: "5e", count: 32)
        var text = "PRAGMA journal_mode=WAL;\nPRAGMA synchronous=FULL;\n"
        text.reserveCapacity(rows * 700 + 100)
        for row in 1...max(rows, 1) {
            if (row - 1) % batch == 0 { text += "BEGIN IMMEDIATE;\n" }
            let id = "'ref-\(row)'"
            text += """
                INSERT INTO subscriptions (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms) \
                VALUES (1, 1, \(id), NULL, \(time), \(row), randomblob(\(sizes.state)), 1, \(time + 2_592_000_000)) \
                ON CONFLICT (store, environment, store_id) DO UPDATE SET account_id = excluded.account_id, \
                store_time_ms = excluded.store_time_ms, position = excluded.position, state = excluded.state, \
                state_code = excluded.state_code, expires_ms = excluded.expires_ms;
                INSERT INTO events (store, environment, store_id, account_id, position, event) \
                VALUES (1, 1, \(id), NULL, \(row), randomblob(\(sizes.event)));
                INSERT INTO changes (position, committed_ms, change) VALUES (\(row), \(time), randomblob(\(sizes.change)));
                INSERT INTO idempotency (idempotency_key, request_hash, response, created_ms) \
                VALUES ('idem-' || \(id), '\(hash)', randomblob(\(sizes.response)), \(time));

                """
            if row % batch == 0 || row == rows { text += "COMMIT;\n" }
        }
        return text
    }
}
