import BenchSupport
import Foundation
import Glibc

/// The ledger under test, started with RPC on a free loopback port (port 0) in a directory the
/// caller owns. Its stderr is read until the "rpc server listening" JSON log line names the
/// port; after that it is copied to our stderr.
final class LedgerProcess {
    let child: ChildProcess
    let port: Int
    private let interruption: Int

    /// Starts `executable` with the ledger variables in `settings` and waits (at most `limit`)
    /// for its listening line. Throws when it cannot start, exits, or stays silent; it is
    /// stopped then.
    init(executable: String, settings: [String: String], directory: String, limit: Duration = .seconds(30))
        throws(BenchError)
    {
        var environment = ProcessInfo.processInfo.environment
        // Plaintext on port 0, and info level: the listening line is an info line.
        for name in ["TLS_CERT", "TLS_KEY", "TLS_CA", "RPC_ALLOW", "LEDGER_STORE", "LEDGER_SQLITE_PATH"] {
            environment[name] = nil
        }
        environment["RPC_LISTEN"] = "127.0.0.1:0"
        environment["HTTP_LISTEN"] = "127.0.0.1:0"
        environment["LOG_LEVEL"] = "info"
        environment.merge(settings) { _, new in new }
        let pipe = Pipe()
        child = try ChildProcess(
            name: executable, executable: executable, arguments: [], environment: environment, directory: directory,
            errorOutput: pipe)
        let pid = child.pid
        interruption = Interruption.add { kill(pid, SIGKILL) }
        // The copying thread gets its own descriptor, so it never reads a closed or reused one.
        let fd = dup(pipe.fileHandleForReading.fileDescriptor)
        try? pipe.fileHandleForReading.close()
        guard fd >= 0 else { throw BenchError("dup: \(String(cString: strerror(errno)))") }
        do throws(BenchError) {
            port = try ServiceLog.readUntilListening(fd, executable: executable, limit: limit)
        } catch {
            close(fd)
            child.stop()
            Interruption.remove(interruption)
            throw error
        }
        ServiceLog.copyToStandardError(fd)
    }

    deinit { stop() }

    /// Stops the ledger (SIGTERM, then SIGKILL after 10 s). Returns its exit status, nil when it
    /// had to be killed or died of a signal.
    @discardableResult
    func stop() -> Int32? {
        let status = child.stop()
        Interruption.remove(interruption)
        return status
    }
}
