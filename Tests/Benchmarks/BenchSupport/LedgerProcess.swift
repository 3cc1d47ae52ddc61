import Foundation
import Glibc

/// The ledger under test, started with RPC on a free loopback port (port 0) in a directory the
/// caller owns. Its stderr is read until the "rpc server listening" JSON log line names the
/// port; after that it is copied to our stderr.
public final class LedgerProcess {
    public let child: ChildProcess
    public let port: Int
    /// Where its `/metrics` are served.
    public let httpPort: Int
    private let interruption: Int

    /// Starts `executable` with the ledger variables in `settings` and waits (at most `limit`)
    /// for its listening line. Throws when it cannot start, exits, or stays silent; it is
    /// stopped then.
    public init(executable: String, settings: [String: String], directory: String, limit: Duration = .seconds(30))
        throws(BenchError)
    {
        var token: Int?
        var http: Int?
        do throws(BenchError) {
            (child, port, http) = try ServiceLog.launch(
                executable, clearing: ["LEDGER_STORE", "LEDGER_SQLITE_PATH"], settings: settings, directory: directory,
                limit: limit, onStart: { pid in token = Interruption.add { kill(pid, SIGKILL) } })
        } catch {
            if let token { Interruption.remove(token) }
            throw error
        }
        interruption = token!
        guard let http else {
            child.stop()
            Interruption.remove(interruption)
            throw BenchError("\(executable) logged no \"http server listening\" line before its RPC one")
        }
        httpPort = http
    }

    /// The group committer's totals from `/metrics`: (commits, committed writes).
    public func commitTotals() throws(BenchError) -> (commits: Int, writes: Int) {
        let text = try MetricsScrape.get(port: httpPort, path: "/metrics")
        guard let commits = MetricsScrape.value("ledger_commits_total", in: text),
            let writes = MetricsScrape.value("ledger_committed_writes_total", in: text)
        else { throw BenchError("the ledger's /metrics lack ledger_commits_total or ledger_committed_writes_total") }
        return (Int(commits), Int(writes))
    }

    deinit { stop() }

    /// Stops the ledger (SIGTERM, then SIGKILL after 10 s). Returns its exit status, nil when it
    /// had to be killed or died of a signal.
    @discardableResult
    public func stop() -> Int32? {
        let status = child.stop()
        Interruption.remove(interruption)
        return status
    }
}
