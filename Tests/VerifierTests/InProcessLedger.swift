import Clients
import Config
import Foundation
import LedgerService
import Lifecycle
import RPC
import ServiceRuntime

/// A ledger in this test's process, on a SQLite file in `directory`, with the methods its
/// process serves, reached through the in-process transport (the same admission, deadlines and
/// status mapping as over TCP, and no port, no process, no wait for one to start).
struct InProcessLedger: Sendable {
    let client: LedgerClient

    init(directory: URL) async throws {
        let environment = EnvironmentReader([
            "LEDGER_SQLITE_PATH": directory.appendingPathComponent("ledger.sqlite").path, "LOG_LEVEL": "error",
        ])
        let host = try await LedgerService.make(environment: environment, signal: ShutdownSignal())
        client = LedgerClient(try host.inProcessTransport())
    }
}
