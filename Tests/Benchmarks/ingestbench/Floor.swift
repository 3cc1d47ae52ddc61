import BenchSupport
import Foundation

/// What one notification cannot cost less than on this machine: its signature verifications at
/// OpenSSL's own speed and one durable append, measured in the same run.
struct Floor {
    var p256VerifyPerSecond: Double
    var p384VerifyPerSecond: Double
    var rsa2048VerifyPerSecond: Double
    /// Seconds of one row appended durably by the raw engine the ledger ran on, in transactions
    /// of `batch`: `sqlite3` (WAL, `synchronous=FULL`) or `pgbench` on the bench's server.
    var appendSeconds: Double
    var batch: Int
    /// What appended, for the report: the tool and its durability settings.
    var appendReference: String

    /// An App Store notification: three JWS (the notification, its transaction, its renewal
    /// info), each a P-256 signature by the leaf, with its chain of two P-384 signatures (the
    /// leaf's certificate by the intermediate, the intermediate's by the root) each time.
    var appleChainSeconds: Double { 3 / p256VerifyPerSecond + 6 / p384VerifyPerSecond + appendSeconds }
    /// The same with each chain verified once and remembered (the verifier keeps verified chains):
    /// the three leaf signatures.
    var appleSeconds: Double { 3 / p256VerifyPerSecond + appendSeconds }
    /// A Play push: the OIDC token's RS256 signature.
    var googleSeconds: Double { 1 / rsa2048VerifyPerSecond + appendSeconds }

    /// The verifies, and the append on SQLite, or with `postgres` on that server (its port and
    /// client programs).
    static func measure(
        seconds: Int, batch: Int, directory: TemporaryDirectory, postgres: (port: Int, tools: PostgresTools)? = nil
    ) throws(BenchError) -> Floor {
        let ecdsa = try speed(["-seconds", "\(seconds)", "ecdsap256", "ecdsap384"], seconds: seconds)
        let rsa = try speed(["-seconds", "\(seconds)", "rsa2048"], seconds: seconds)
        let append: Double
        let reference: String
        if let postgres {
            append = try pgbenchAppend(batch: batch, port: postgres.port, tools: postgres.tools, directory: directory)
            reference = "pgbench append (fsync=on, synchronous_commit=on, \(batch) a transaction)"
        } else {
            append = try sqliteAppend(batch: batch, directory: directory)
            reference = "sqlite3 append (synchronous=FULL, \(batch) a transaction)"
        }
        return Floor(
            p256VerifyPerSecond: try verifyRate(ecdsa, line: "(nistp256)"),
            p384VerifyPerSecond: try verifyRate(ecdsa, line: "(nistp384)"),
            rsa2048VerifyPerSecond: try verifyRate(rsa, line: "rsa 2048 bits"), appendSeconds: append, batch: batch,
            appendReference: reference)
    }

    private static func speed(_ arguments: [String], seconds: Int) throws(BenchError) -> String {
        let run = try ChildProcess.runToCompletion(
            "openssl", ["speed"] + arguments, limit: .seconds(seconds * 8 + 60), separateStandardError: true)
        guard run.status == 0 else { throw BenchError("openssl speed exited with \(run.status)") }
        return run.output
    }

    /// The last number of the summary line containing `line` (verify/s is the last column).
    private static func verifyRate(_ output: String, line: String) throws(BenchError) -> Double {
        for text in output.split(whereSeparator: \.isNewline) where text.contains(line) {
            let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
            if let last = numbers.last, last > 0, numbers.count >= 2 { return last }
        }
        throw BenchError("openssl speed printed no verify/s for \(line): \(output.suffix(500))")
    }

    /// Rows appended by each reference: about 600 bytes each, in transactions of `batch` rows.
    private static let appendRows = 4000

    private static func sqliteAppend(batch: Int, directory: TemporaryDirectory) throws(BenchError) -> Double {
        let rows = appendRows
        var script = "PRAGMA journal_mode=WAL;\nPRAGMA synchronous=FULL;\n"
        script += "CREATE TABLE changes (position INTEGER PRIMARY KEY, key TEXT NOT NULL, body BLOB NOT NULL);\n"
        for index in 0..<rows {
            if index % batch == 0 { script += "BEGIN IMMEDIATE;\n" }
            script += "INSERT INTO changes VALUES (\(index + 1), 'key-\(index)', randomblob(600));\n"
            if index % batch == batch - 1 || index == rows - 1 { script += "COMMIT;\n" }
        }
        let file = try directory.write("append.sql", script)
        let started = ContinuousClock.now
        let run = try ChildProcess.runToCompletion(
            "sqlite3", ["-batch", "-bail", directory.file("append.sqlite"), ".read \(file)"], limit: .seconds(300))
        let elapsed = ContinuousClock.now - started
        guard run.status == 0 else { throw BenchError("sqlite3 exited with \(run.status): \(run.output.suffix(500))") }
        return seconds(elapsed) / Double(rows)
    }

    /// The same rows by `pgbench` (one client, prepared statements) into a table of their own in
    /// a fresh database of the server the ledger ran on; the time is pgbench's, connection set-up
    /// excluded.
    private static func pgbenchAppend(batch: Int, port: Int, tools: PostgresTools, directory: TemporaryDirectory)
        throws(BenchError) -> Double
    {
        let connection = ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres"]
        func psql(_ database: String, _ command: String) throws(BenchError) {
            let run = try ChildProcess.runToCompletion(
                tools.psql, ["-X", "-q", "-v", "ON_ERROR_STOP=1"] + connection + ["-d", database, "-c", command],
                limit: .seconds(60))
            guard run.status == 0 else { throw BenchError("psql \(command) failed: \(run.output.suffix(500))") }
        }
        try psql("postgres", "CREATE DATABASE ingestbench_append")
        try psql(
            "ingestbench_append",
            "CREATE TABLE changes (position bigserial PRIMARY KEY, key text NOT NULL, body bytea NOT NULL)")
        // 600 bytes that do not compress, as sqlite3's randomblob.
        var generator = SystemRandomNumberGenerator()
        let body = (0..<600).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        var script = "BEGIN;\n"
        for _ in 0..<batch {
            script += "INSERT INTO changes (key, body) VALUES ('key-' || md5(random()::text), '\\x\(body)');\n"
        }
        script += "COMMIT;\n"
        let file = try directory.write("append-pgbench.sql", script)
        let transactions = max(1, appendRows / batch)
        let arguments = ["-n", "-M", "prepared", "-f", file, "-c", "1", "-t", "\(transactions)"] + connection
        let run = try ChildProcess.runToCompletion(
            tools.pgbench, arguments + ["ingestbench_append"], limit: .seconds(300))
        guard run.status == 0,
            let line = run.output.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("tps = ") }),
            let tps = Double(line.dropFirst(6).prefix { $0.isNumber || $0 == "." }), tps > 0
        else { throw BenchError("pgbench exited with \(run.status): \(run.output.suffix(500))") }
        return 1 / (tps * Double(batch))
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
