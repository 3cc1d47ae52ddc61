import BenchSupport
import Foundation
import Glibc

/// The entitlement service under test, started with RPC and HTTP on free loopback ports, the
/// policy file and the ledger's address; its log is copied to our stderr. `init` returns once
/// `/readyz` answers 200 (the ledger answered and the first snapshot is loaded) and says how
/// long that took from the moment the process was started.
final class EntitlementProcess {
    let child: ChildProcess
    let port: Int
    let httpPort: Int
    /// From just before the process was spawned to the first 200 from `/readyz`.
    let secondsToReady: Double
    private let interruption: Int

    /// Starts `executable` and polls `/readyz` every 10 ms for at most `limit`. Throws when it
    /// cannot start, exits, or is not ready in time; it is stopped then.
    init(
        executable: String, ledgerPort: Int, policyPath: String, checkpointPath: String?, directory: String,
        limit: Duration
    ) throws(BenchError) {
        var token: Int?
        var launched: (child: ChildProcess, port: Int, httpPort: Int?)
        let start = MonotonicTime.nanoseconds()
        do throws(BenchError) {
            launched = try ServiceLog.launch(
                executable,
                clearing: [
                    "ENTITLEMENT_POLICY_FILE", "LEDGER_ADDR", "VIEW_CHECKPOINT_PATH",
                    "VIEW_CHECKPOINT_INTERVAL_SECONDS",
                ],
                settings: ["ENTITLEMENT_POLICY_FILE": policyPath, "LEDGER_ADDR": "127.0.0.1:\(ledgerPort)"].merging(
                    // Written only at shutdown, so that the stop's time is the write's.
                    checkpointPath.map { ["VIEW_CHECKPOINT_PATH": $0, "VIEW_CHECKPOINT_INTERVAL_SECONDS": "86400"] }
                        ?? [:]
                ) { $1 },
                directory: directory, limit: .seconds(30),
                onStart: { pid in token = Interruption.add { kill(pid, SIGKILL) } })
        } catch {
            if let token { Interruption.remove(token) }
            throw error
        }
        child = launched.child
        port = launched.port
        interruption = token!
        guard let http = launched.httpPort else {
            child.stop()
            Interruption.remove(interruption)
            throw BenchError("\(executable) logged no \"http server listening\" line before its RPC one")
        }
        httpPort = http
        let deadline = start + UInt64(limit.components.seconds) * 1_000_000_000
        while true {
            // MetricsScrape.get throws for anything but 200 (503 while not ready).
            if (try? MetricsScrape.get(port: http, path: "/readyz")) != nil { break }
            let now = MonotonicTime.nanoseconds()
            guard child.isRunning, now < deadline else {
                let reason = child.isRunning ? "was not ready within \(limit)" : "exited before it was ready"
                child.stop()
                Interruption.remove(interruption)
                throw BenchError("\(executable) \(reason) (its log is above)")
            }
            usleep(10_000)
        }
        secondsToReady = Double(MonotonicTime.nanoseconds() - start) / 1e9
    }

    deinit { stop() }

    /// The accounts the view holds, from `/metrics`.
    func viewAccounts() throws(BenchError) -> Int {
        let text = try MetricsScrape.get(port: httpPort, path: "/metrics")
        guard let accounts = MetricsScrape.value("entitlement_view_accounts", in: text) else {
            throw BenchError("the entitlement service's /metrics lack entitlement_view_accounts")
        }
        return Int(accounts)
    }

    /// Stops the service (SIGTERM, then SIGKILL after 10 s). Returns its exit status, nil when
    /// it had to be killed or died of a signal.
    @discardableResult
    func stop() -> Int32? {
        let status = child.stop()
        Interruption.remove(interruption)
        return status
    }
}
