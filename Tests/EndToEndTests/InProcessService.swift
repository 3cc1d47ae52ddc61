import Config
import HTTP
import Lifecycle
import RPC
import ServiceProcessKit
import ServiceRuntime

/// A service the stack runs: a process (`ServiceProcess`) or a host in this test's process.
protocol RunningService: Sendable {
    func rpcPort() async throws -> Int
    func httpPort() async throws -> Int
    func opsPort() async throws -> Int
    /// Stops it and waits until it has.
    func stop() async
}

extension ServiceProcess: RunningService {
    func stop() async {
        terminate()
        _ = await waitForExit()
    }
}

/// A service's host run in this test's process, its listeners on loopback port 0: what its
/// process would run, without a process to start, and with its calls to the ledger through
/// the in-process transport when it is given one.
final class InProcessService: RunningService {
    let host: ServiceHost
    private let signal: ShutdownSignal
    private let running: Task<Void, any Error>

    /// Builds the service with `make` from `environment` (listeners on port 0 unless it says
    /// otherwise) and runs it until `stop()`; returns once it runs.
    init(
        _ make: (EnvironmentReader, ShutdownSignal) async throws -> ServiceHost, environment: [String: String]
    ) async throws {
        let signal = ShutdownSignal()
        let settings = ["RPC_LISTEN": "127.0.0.1:0", "HTTP_LISTEN": "127.0.0.1:0", "LOG_LEVEL": "warning"]
            .merging(environment) { _, new in new }
        let host = try await make(EnvironmentReader(settings), signal)
        self.host = host
        self.signal = signal
        running = Task { try await host.run() }
        await host.waitUntilRunning()
    }

    func rpcPort() -> Int { host.rpcPort }
    func httpPort() -> Int { host.http.port }
    func opsPort() -> Int { host.ops?.port ?? 0 }

    /// A transport to this service's methods in this process.
    func transport() throws -> InProcessTransport { try host.inProcessTransport() }

    func stop() async {
        signal.trigger("the test is done")
        _ = try? await running.value
    }
}
