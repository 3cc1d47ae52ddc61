import BenchSupport
import Foundation

/// What one notification cannot cost less than on this machine: its signature verifications at
/// OpenSSL's own speed and one durable append, measured in the same run.
struct Floor {
    var p256VerifyPerSecond: Double
    var p384VerifyPerSecond: Double
    var rsa2048VerifyPerSecond: Double
    /// Seconds of one row appended by `sqlite3` (WAL, `synchronous=FULL`) in transactions of `batch`.
    var appendSeconds: Double
    var batch: Int

    /// An App Store notification: three JWS (the notification, its transaction, its renewal
    /// info), each a P-256 signature by the leaf, with its chain of two P-384 signatures (the
    /// leaf's certificate by the intermediate, the intermediate's by the root) each time.
    var appleChainSeconds: Double { 3 / p256VerifyPerSecond + 6 / p384VerifyPerSecond + appendSeconds }
    /// The same with each chain verified once and remembered (the verifier keeps verified chains):
    /// the three leaf signatures.
    var appleSeconds: Double { 3 / p256VerifyPerSecond + appendSeconds }
    /// A Play push: the OIDC token's RS256 signature.
    var googleSeconds: Double { 1 / rsa2048VerifyPerSecond + appendSeconds }

    static func measure(seconds: Int, batch: Int, directory: TemporaryDirectory) throws(BenchError) -> Floor {
        let ecdsa = try speed(["-seconds", "\(seconds)", "ecdsap256", "ecdsap384"], seconds: seconds)
        let rsa = try speed(["-seconds", "\(seconds)", "rsa2048"], seconds: seconds)
        return Floor(
            p256VerifyPerSecond: try verifyRate(ecdsa, line: "(nistp256)"),
            p384VerifyPerSecond: try verifyRate(ecdsa, line: "(nistp384)"),
            rsa2048VerifyPerSecond: try verifyRate(rsa, line: "rsa 2048 bits"),
            appendSeconds: try append(batch: batch, directory: directory), batch: batch)
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

    /// 4,000 rows of about 600 bytes in transactions of `batch` rows.
    private static func append(batch: Int, directory: TemporaryDirectory) throws(BenchError) -> Double {
        let rows = 4000
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
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
