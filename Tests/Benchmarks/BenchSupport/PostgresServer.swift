import Foundation

/// A throwaway PostgreSQL server (scripts/postgres-test-server) in a temporary directory on a
/// free loopback port, with `fsync = on` and `synchronous_commit = on`. `stop()` stops it and
/// removes its directory; it is idempotent and also runs on deinit.
public final class PostgresServer {
    /// `postgresql://` URL of its `ledger_test` database, as the script printed it.
    public let url: String
    public let port: Int
    private let name: String
    private let script: String
    private let directory: TemporaryDirectory
    private var stopped = false
    private let interruption: Int

    /// Starts the server and creates its `ledger_test` database; `name` is the benchmark's, for
    /// its temporary directory and notes. Throws when the script fails; whatever it started is
    /// stopped then.
    public init(script: String, name: String) throws(BenchError) {
        guard FileManager.default.isExecutableFile(atPath: script) else {
            throw BenchError(
                "\(script) not found or not executable (run from the repository root, or --postgres-script)")
        }
        self.script = script
        self.name = name
        directory = try TemporaryDirectory("\(name)-postgres")
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
            Self.stop(script: script, directory: directory, name: name)
            Interruption.remove(interruption)
            throw error
        }
        guard started.status == 0,
            let line = started.output.split(whereSeparator: \.isNewline).last(where: { $0.hasPrefix("postgresql://") })
        else {
            Self.stop(script: script, directory: directory, name: name)
            Interruption.remove(interruption)
            throw BenchError("\(script) start failed (status \(started.status)):\n\(started.output.suffix(2000))")
        }
        url = String(line)
    }

    deinit { stop() }

    public func stop() {
        guard !stopped else { return }
        stopped = true
        Self.stop(script: script, directory: directory, name: name)
        Interruption.remove(interruption)
    }

    private static func stop(script: String, directory: TemporaryDirectory, name: String) {
        let result = try? ChildProcess.runToCompletion(script, ["stop", directory.path], limit: .seconds(90))
        if result?.status != 0 {
            BenchCommand.note(name, "\(script) stop \(directory.path) failed:\n\(result?.output.suffix(2000) ?? "")")
        }
        directory.remove()
    }
}
