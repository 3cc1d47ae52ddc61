import BenchSupport
import Foundation

/// The raw-PostgreSQL reference: pgbench with a custom script doing per row the inserts
/// Ledger.recordVerifiedState does (the subscription upsert, the event, the change, the
/// idempotency row), `batch` rows per transaction, prepared statements (the ledger prepares
/// too), with the schema `pg_dump --schema-only` took from the ledger's.
///
/// `ReferenceRows.phase` runs (the judged one, and the informational ones with a batch of every
/// writer or a client per writer, which come after it) insert keys shaped and ordered like a
/// ledger phase's (one of each writer, then the next of each) into one reference database that
/// keeps every such run's rows, so that it grows at about the ledger's pace across rounds.
/// `.empty` runs insert sequential keys into a fresh database.
final class PgbenchReference {
    static let database = "ledgerbench_reference"
    static let emptyDatabase = "ledgerbench_empty"

    let tools: PostgresTools
    let port: Int
    /// The ledger's schema, as pg_dump printed it.
    let schema: String
    let sizes: AppendWorkload.RowSizes
    let directory: TemporaryDirectory
    let flushes: DeviceFlushes?
    /// Runs so far on the kept database, each with a key sequence of its own.
    private var keptRuns = 0
    /// Runs per phase name: a phase repeated (an informational run) gets keys of its own.
    private var phaseRuns: [String: Int] = [:]

    init(
        tools: PostgresTools, port: Int, schema: String, sizes: AppendWorkload.RowSizes, directory: TemporaryDirectory,
        flushes: DeviceFlushes?
    ) {
        self.tools = tools
        self.port = port
        self.schema = schema
        self.sizes = sizes
        self.directory = directory
        self.flushes = flushes
    }

    /// Runs pgbench for about `seconds` with `clients` connections, inserting `rows`.
    func measure(batch: Int, clients: Int, seconds: Double, rows: ReferenceRows) throws(BenchError) -> ReferenceRun {
        let database = rows.isEmpty ? Self.emptyDatabase : Self.database
        if rows.isEmpty || keptRuns == 0 {
            try psql("postgres", ["-c", "DROP DATABASE IF EXISTS \(database)", "-c", "CREATE DATABASE \(database)"])
            let schemaFile = try directory.write("schema.sql", schema)
            try psql(database, ["-f", schemaFile, "-c", "CREATE SEQUENCE public.ref_position;"])
        }
        // A key sequence per run, from 0.
        var keys = "ref_key"
        var prefix = "ref"
        if case .phase(let name, _, let workload) = rows {
            keptRuns += 1
            keys = "ref_key_\(keptRuns)"
            let uses = phaseRuns[name, default: 0] + 1
            phaseRuns[name] = uses
            prefix = workload.keyPrefix(uses > 1 ? "\(name)-x\(uses)" : name)
        }
        try psql(database, ["-c", "CREATE SEQUENCE IF NOT EXISTS public.\(keys) MINVALUE 0 START 0;"])
        let scriptFile = try directory.write(
            "pgbench-\(batch).sql", script(batch: batch, rows: rows, sequence: keys, prefix: prefix))
        let flushesBefore = flushes?.count()
        let arguments = [
            "-n", "-M", "prepared", "-f", scriptFile, "-c", "\(clients)", "-j", "\(min(clients, 2))", "-T",
            "\(max(1, Int(seconds.rounded())))", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", database,
        ]
        let result = try ChildProcess.runToCompletion(tools.pgbench, arguments, limit: .seconds(Int64(seconds) + 120))
        let flushesAfter = flushes?.count()
        guard result.status == 0, let tps = Self.number(after: "tps = ", in: result.output),
            let transactions = Self.number(after: "number of transactions actually processed: ", in: result.output)
        else {
            throw BenchError("pgbench \(arguments.joined(separator: " ")) failed:\n\(result.output.suffix(2000))")
        }
        var flushCount: Int?
        if let flushesBefore, let flushesAfter { flushCount = flushesAfter - flushesBefore }
        let inserted = Int(transactions) * batch
        // pgbench's tps excludes connection set-up; the time it implies is the measured time.
        return ReferenceRun(
            tool: "pgbench", batch: batch, clients: clients, rows: inserted,
            seconds: tps > 0 ? transactions / tps : 0, flushes: flushCount, empty: rows.isEmpty)
    }

    /// The pgbench script: one transaction of `batch` rows. Row n (from 0, by `sequence`) is
    /// keyed as `ReferenceRows.storeID` keys it, after `prefix` for a phase's rows. Blobs are hex
    /// literals of the sizes the ledger stores.
    func script(batch: Int, rows: ReferenceRows, sequence: String, prefix: String) -> String {
        func blob(_ count: Int, _ seed: Int) -> String {
            let digits = Array("0123456789abcdef")
            return "'\\x" + String((0..<(count * 2)).map { digits[($0 * 7 + seed) % 16] }) + "'"
        }
        let time = AppendWorkload.storeTime
        let hash = String(repeating: "5e", count: 32)
        let state = blob(sizes.state, 1)
        let event = blob(sizes.event, 2)
        let change = blob(sizes.change, 3)
        let response = blob(sizes.response, 4)
        // The id of row `n` (an SQL expression).
        func key(_ n: String) -> String {
            switch rows {
            case .phase(_, let writers, _): "'\(prefix)-' || (\(n) % \(writers)) || '-' || (\(n) / \(writers))"
            case .empty: "'ref-' || (\(n) + 1)"
            }
        }
        // The row's number is drawn once, by the first statement; the others read it back.
        let next = "(SELECT \(key("n")) FROM (SELECT nextval('\(sequence)') AS n) AS next)"
        let current = key("currval('\(sequence)')")
        var text = "BEGIN;\n"
        for _ in 0..<batch {
            text += """
                INSERT INTO subscriptions (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms) \
                VALUES (1, 1, \(next), NULL, \(time), nextval('ref_position'), \(state), 1, \(time + 2_592_000_000)) \
                ON CONFLICT (store, environment, store_id) DO UPDATE SET account_id = excluded.account_id, \
                store_time_ms = excluded.store_time_ms, position = excluded.position, state = excluded.state, \
                state_code = excluded.state_code, expires_ms = excluded.expires_ms;
                INSERT INTO events (store, environment, store_id, account_id, position, event) \
                VALUES (1, 1, \(current), NULL, currval('ref_position'), \(event));
                INSERT INTO changes (position, committed_ms, change) VALUES (currval('ref_position'), \(time), \(change));
                INSERT INTO idempotency (idempotency_key, request_hash, response, created_ms) \
                VALUES ('idem-' || \(current), '\(hash)', \(response), \(time));

                """
        }
        return text + "COMMIT;\n"
    }

    /// The ledger's schema in `database` (tables, indexes, sequences), without owners or privileges.
    static func schema(tools: PostgresTools, port: Int, database: String) throws(BenchError) -> String {
        let result = try ChildProcess.runToCompletion(
            tools.pgDump,
            [
                "--schema-only", "--no-owner", "--no-privileges", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres",
                database,
            ],
            limit: .seconds(60), separateStandardError: true)
        guard result.status == 0, result.output.contains("CREATE TABLE public.idempotency") else {
            throw BenchError("pg_dump could not read the ledger's schema:\n\(result.output.suffix(2000))")
        }
        return result.output
    }

    private func psql(_ database: String, _ arguments: [String]) throws(BenchError) {
        let all =
            ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database]
            + arguments
        let result = try ChildProcess.runToCompletion(tools.psql, all, limit: .seconds(60))
        guard result.status == 0 else {
            throw BenchError(
                "psql \(arguments.joined(separator: " ").prefix(200)) failed:\n\(result.output.suffix(2000))")
        }
    }

    /// The number after `label` on its line of pgbench's output.
    static func number(after label: String, in output: String) -> Double? {
        for line in output.split(whereSeparator: \.isNewline) {
            guard let range = line.range(of: label) else { continue }
            let rest = line[range.upperBound...].prefix { $0.isNumber || $0 == "." }
            return Double(rest)
        }
        return nil
    }
}
