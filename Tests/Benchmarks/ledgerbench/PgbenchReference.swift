import BenchSupport
import Foundation

/// The raw-PostgreSQL reference: pgbench with a custom script doing per row the inserts
/// Ledger.recordVerifiedState does (the subscription upsert, the event, the change, the
/// idempotency row), `batch` rows per transaction, prepared statements (the ledger prepares
/// too), on a fresh database with the schema `pg_dump --schema-only` took from the ledger's.
/// Keys come from a sequence so each row is new, as each append is.
struct PgbenchReference {
    static let database = "ledgerbench_reference"

    let tools: PostgresTools
    let port: Int
    /// The ledger's schema, as pg_dump printed it.
    let schema: String
    let sizes: AppendWorkload.RowSizes
    let directory: TemporaryDirectory
    let flushes: DeviceFlushes?

    /// Runs pgbench for about `seconds` with `clients` connections on a fresh database.
    func measure(batch: Int, clients: Int, seconds: Double) throws(BenchError) -> ReferenceRun {
        try psql(
            "postgres", ["-c", "DROP DATABASE IF EXISTS \(Self.database)", "-c", "CREATE DATABASE \(Self.database)"])
        let schemaFile = try directory.write("schema.sql", schema)
        try psql(
            Self.database,
            ["-f", schemaFile, "-c", "CREATE SEQUENCE public.ref_key; CREATE SEQUENCE public.ref_position;"])
        let scriptFile = try directory.write("pgbench-\(batch).sql", script(batch: batch))
        let flushesBefore = flushes?.count()
        let arguments = [
            "-n", "-M", "prepared", "-f", scriptFile, "-c", "\(clients)", "-j", "\(min(clients, 2))", "-T",
            "\(max(1, Int(seconds.rounded())))", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", Self.database,
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
        let rows = Int(transactions) * batch
        // pgbench's tps excludes connection set-up; the time it implies is the measured time.
        return ReferenceRun(
            tool: "pgbench", batch: batch, clients: clients, rows: rows,
            seconds: tps > 0 ? transactions / tps : 0, flushes: flushCount)
    }

    /// The pgbench script: one transaction of `batch` rows. Blobs are hex literals of the sizes
    /// the ledger stores.
    func script(batch: Int) -> String {
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
        var text = "BEGIN;\n"
        for _ in 0..<batch {
            text += """
                INSERT INTO subscriptions (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms) \
                VALUES (1, 1, 'ref-' || nextval('ref_key'), NULL, \(time), nextval('ref_position'), \(state), 1, \(time + 2_592_000_000)) \
                ON CONFLICT (store, environment, store_id) DO UPDATE SET account_id = excluded.account_id, \
                store_time_ms = excluded.store_time_ms, position = excluded.position, state = excluded.state, \
                state_code = excluded.state_code, expires_ms = excluded.expires_ms;
                INSERT INTO events (store, environment, store_id, account_id, position, event) \
                VALUES (1, 1, 'ref-' || currval('ref_key'), NULL, currval('ref_position'), \(event));
                INSERT INTO changes (position, committed_ms, change) VALUES (currval('ref_position'), \(time), \(change));
                INSERT INTO idempotency (idempotency_key, request_hash, response, created_ms) \
                VALUES ('idem-ref-' || currval('ref_key'), '\(hash)', \(response), \(time));

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

/// Where the PostgreSQL client programs are: the server's own bin directory first, then PATH.
struct PostgresTools {
    let pgbench: String
    let psql: String
    let pgDump: String

    init(preferred directory: String) throws(BenchError) {
        func find(_ name: String) throws(BenchError) -> String {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            guard let path = ChildProcess.resolve(name) else {
                throw BenchError("\(name) not found in \(directory) or on PATH (scripts/install-deps bench)")
            }
            return path
        }
        pgbench = try find("pgbench")
        psql = try find("psql")
        pgDump = try find("pg_dump")
    }
}
