import BenchSupport
import Foundation

/// The raw-SQLite reference: the `sqlite3` shell running a generated script, in WAL mode with
/// synchronous=FULL (as Shared/Storage/SQLite opens the ledger's connection), doing per row the inserts
/// Ledger.recordVerifiedState does (the subscription upsert, the event, the change, the
/// idempotency row) in transactions of `batch` rows, `BEGIN IMMEDIATE` … `COMMIT` like the
/// ledger's writer. `ReferenceRows.phase` runs (the judged one, and the informational one with
/// a batch of every writer) insert a ledger phase's own keys into a copy of the ledger's
/// database as that phase began (`snapshot`); `.empty` runs, sequential keys into a fresh file
/// with the ledger's schema.
struct SQLiteReference {
    let sqlite3: String
    /// The ledger's DDL, read from the file the ledger migrated.
    let schema: String
    let sizes: AppendWorkload.RowSizes
    let directory: TemporaryDirectory
    let flushes: DeviceFlushes?

    /// A copy of the ledger's database, and the newest change position in it.
    struct Snapshot {
        let path: String
        let lastPosition: Int
    }

    /// Copies the ledger's database at `ledgerPath` to `name` in the directory with SQLite's
    /// online backup (a consistent copy, WAL included; the ledger must be idle, not stopped).
    func snapshot(ledgerPath: String, name: String) throws(BenchError) -> Snapshot {
        let path = directory.file(name)
        try? FileManager.default.removeItem(atPath: path)
        let backup = try ChildProcess.runToCompletion(
            sqlite3, ["-batch", "-bail", ledgerPath, ".backup '\(path)'"], limit: .seconds(300))
        let last = try ChildProcess.runToCompletion(
            sqlite3,
            ["-batch", "-noheader", "-list", "-readonly", path, "SELECT COALESCE(MAX(position), 0) FROM changes"],
            limit: .seconds(60))
        guard backup.status == 0, last.status == 0,
            let position = Int(last.output.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw BenchError(
                "cannot copy the ledger's database:\n\(backup.output.suffix(1000))\(last.output.suffix(1000))")
        }
        return Snapshot(path: path, lastPosition: position)
    }

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

    /// A short run to learn the rate, then one sized to last about `seconds`. `rows` must be
    /// `.empty` exactly when there is no snapshot.
    func measure(batch: Int, seconds: Double, rows: ReferenceRows, from snapshot: Snapshot?, maxRows: Int = 2_000_000)
        throws(BenchError) -> ReferenceRun
    {
        precondition(rows.isEmpty == (snapshot == nil), "a phase's rows go into its snapshot, empty rows into no file")
        let probe = try run(
            batch: batch, count: batch * max(20, 200 / batch), rows: rows, from: snapshot, label: "probe")
        let count = min(maxRows, max(batch * 20, Int(probe.rowsPerSecond * seconds)))
        return try run(batch: batch, count: count - count % batch, rows: rows, from: snapshot, label: "run")
    }

    /// Inserts `count` rows in transactions of `batch` into a copy of `snapshot` (or a fresh
    /// file); times the sqlite3 process.
    private func run(batch: Int, count: Int, rows: ReferenceRows, from snapshot: Snapshot?, label: String)
        throws(BenchError) -> ReferenceRun
    {
        let database = directory.file("reference-\(label)-\(batch).sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) } }
        if let snapshot {
            try Self.copyDurably(snapshot.path, to: database)
        } else {
            let schemaFile = try directory.write("schema.sql", schema)
            let created = try ChildProcess.runToCompletion(
                sqlite3, ["-batch", "-bail", database, ".read \(schemaFile)"], limit: .seconds(30))
            guard created.status == 0 else {
                throw BenchError("sqlite3 could not create the schema:\n\(created.output.suffix(2000))")
            }
        }
        let scriptFile = try directory.write(
            "inserts.sql", script(batch: batch, count: count, rows: rows, after: snapshot?.lastPosition ?? 0))
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
            tool: "sqlite3", batch: batch, clients: 1, rows: count, seconds: seconds, flushes: flushCount,
            empty: rows.isEmpty)
    }

    /// Copies a file and syncs the copy, so that its pages are not written back during a run.
    static func copyDurably(_ source: String, to destination: String) throws(BenchError) {
        do {
            try FileManager.default.copyItem(atPath: source, toPath: destination)
        } catch {
            throw BenchError("cannot copy \(source) to \(destination): \(error)")
        }
        let descriptor = open(destination, O_RDWR)
        guard descriptor >= 0, fsync(descriptor) == 0 else {
            if descriptor >= 0 { close(descriptor) }
            throw BenchError("cannot sync \(destination)")
        }
        close(descriptor)
    }

    /// The script: durability pragmas, then `count / batch` transactions of `batch` rows, keyed
    /// as `rows` says, at change positions after `after`. Blob contents come from randomblob()
    /// with the sizes the ledger stores.
    func script(batch: Int, count: Int, rows: ReferenceRows, after: Int) -> String {
        let time = AppendWorkload.storeTime
        let hash = String(repeating: "5e", count: 32)
        var text = "PRAGMA journal_mode=WAL;\nPRAGMA synchronous=FULL;\n"
        text.reserveCapacity(count * 800 + 100)
        for index in 0..<max(count, 1) {
            if index % batch == 0 { text += "BEGIN IMMEDIATE;\n" }
            let id = "'\(rows.storeID(index))'"
            let position = after + index + 1
            text += """
                INSERT INTO subscriptions (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms) \
                VALUES (1, 1, \(id), NULL, \(time), \(position), randomblob(\(sizes.state)), 1, \(time + 2_592_000_000)) \
                ON CONFLICT (store, environment, store_id) DO UPDATE SET account_id = excluded.account_id, \
                store_time_ms = excluded.store_time_ms, position = excluded.position, state = excluded.state, \
                state_code = excluded.state_code, expires_ms = excluded.expires_ms;
                INSERT INTO events (store, environment, store_id, account_id, position, event) \
                VALUES (1, 1, \(id), NULL, \(position), randomblob(\(sizes.event)));
                INSERT INTO changes (position, committed_ms, change) VALUES (\(position), \(time), randomblob(\(sizes.change)));
                INSERT INTO idempotency (idempotency_key, request_hash, response, created_ms) \
                VALUES ('idem-' || \(id), '\(hash)', randomblob(\(sizes.response)), \(time));

                """
            if (index + 1) % batch == 0 || index + 1 == count { text += "COMMIT;\n" }
        }
        return text
    }
}
