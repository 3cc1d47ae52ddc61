import BenchSupport
import Foundation

/// A throwaway PostgreSQL server (scripts/postgres-test-server) in a temporary directory on a
/// free loopback port, with `fsync = on` and `synchronous_commit = on`. `stop()` stops it and
/// removes its directory; it is idempotent and also runs on deinit.
final class PostgresServer {
    let url: String
    let port: Int
    private let script: String
    private let directory: TemporaryDirectory
    private var stopped = false
    private let interruption: Int

    /// Starts the server and creates its `ledger_test` database. Throws when the script fails;
    /// whatever it started is stopped then.
    init(script: String) throws(BenchError) {
        guard FileManager.default.isExecutableFile(atPath: script) else {
            throw BenchError(
                "\(script) not found or not executable (run from the repository root, or --postgres-script)")
        }
        self.script = script
        directory = try TemporaryDirectory("ledgerbench-postgres")
        port = try LoopbackAddress.freePort()
        let directoryPath = directory.path
        interruption = Interruption.add {
            _ = try? ChildProcess.runToCompletion(script, ["stop", directoryPath], limit: .seconds(60))
        }
        let started: (status: Int32, output: String)
        do {
            started = try ChildProcess.runToCompletion(
                script, ["start", directory.path, "\(port)"], limit: .seconds(120), separateStandardError: true)
        } catch {
            Self.stop(script: script, directory: directory)
            Interruption.remove(interruption)
            throw error
        }
        guard started.status == 0,
            let line = started.output.split(whereSeparator: \.isNewline).last(where: { $0.hasPrefix("postgresql://") })
        else {
            Self.stop(script: script, directory: directory)
            Interruption.remove(interruption)
            throw BenchError("\(script) start failed (status \(started.status)):\n\(started.output.suffix(2000))")
        }
        url = String(line)
    }

    deinit { stop() }

    func stop() {
        guard !stopped else { return }
        stopped = true
        Self.stop(script: script, directory: directory)
        Interruption.remove(interruption)
    }

    private static func stop(script: String, directory: TemporaryDirectory) {
        let result = try? ChildProcess.runToCompletion(script, ["stop", directory.path], limit: .seconds(90))
        if result?.status != 0 {
            Benchmark.note("\(script) stop \(directory.path) failed:\n\(result?.output.suffix(2000) ?? "")")
        }
        directory.remove()
    }
}
