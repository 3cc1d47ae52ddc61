import Config
import Foundation
import Glibc
import Lifecycle
import Observability
import RPC
import ServiceRuntime
import Sockets
import Synchronization
import Testing
import Wire

@Suite("Service host")
struct ServiceHostTests {
    /// A one-shot gate the test opens.
    final class Gate: Sendable {
        let arrived = ShutdownSignal()
        let opened = ShutdownSignal()
    }

    @Test("a shutdown signal with a call in flight lets the call finish, then run() returns")
    func signalDrainsCallsInFlight() async throws {
        // SIGUSR2 goes through the same signal path as SIGTERM without touching the test runner's.
        let signal = ShutdownSignal.installed(for: [SIGUSR2])
        let host = try ServiceHost(
            name: "testsvc", healthMethod: "test.v1.Svc/Health", defaultRPC: "127.0.0.1:0", defaultHTTP: "127.0.0.1:0",
            environment: EnvironmentReader(["SHUTDOWN_GRACE": "10s"]), signal: signal, logSink: .capturing())
        let gate = Gate()
        host.router.register(
            "test.v1.Svc/Held",
            .unary { _, bytes in
                gate.arrived.trigger("arrived")
                _ = await gate.opened.wait()
                return bytes
            })
        let running = Task { try await host.run() }
        await host.waitUntilRunning()
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: host.rpcPort)])
        let call = Task { try await client.unary("test.v1.Svc/Held", request: [7]) }
        _ = await gate.arrived.wait()

        kill(getpid(), SIGUSR2)
        _ = await signal.wait()
        // Draining: readiness says so while the call is still in flight.
        #expect(host.notReady() == ["shutting down"])
        gate.opened.trigger("open")
        #expect(try await call.value == [7])
        try await running.value
    }

    @Test("Health reports the service, its version and SERVING; DRAINING once shutdown begins")
    func health() async throws {
        let signal = ShutdownSignal()
        let host = try ServiceHost(
            name: "testsvc", healthMethod: "test.v1.Svc/Health", defaultRPC: "127.0.0.1:0", defaultHTTP: "127.0.0.1:0",
            environment: EnvironmentReader([:]), signal: signal, logSink: .capturing())
        host.addReadinessCheck("always") { true }
        let running = Task { try await host.run() }
        await host.waitUntilRunning()
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: host.rpcPort)])
        let health = try await client.call("test.v1.Svc/Health", HealthRequest(), as: HealthResponse.self)
        #expect(health.service == "testsvc")
        #expect(health.status == .serving)
        #expect(health.version == ServiceHost.defaultVersion)
        #expect(health.connections == 1)
        #expect(host.notReady().isEmpty)
        signal.trigger("test")
        try await running.value
    }
}
