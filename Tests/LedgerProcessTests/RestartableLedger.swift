import Config
import Foundation
import Glibc
import RPC
import Sockets
import TestSupport
import Testing
import Wire

/// One ledger instance that a test crashes and restarts: each start is a new `ledger` process
/// on a new port (read from its log) with a new client, numbered by `generation`.
///
/// Callers take `current()`; when a call on generation g fails they ask `wasCrashed(g)`: a
/// failure of a generation the test crashed is expected, and `client(after: g)` waits for the
/// next start. `crash()` marks the generation before it sends SIGKILL, so every failure the
/// kill causes is seen as expected.
actor RestartableLedger {
    let name: String
    private let environment: [String: String]
    private var process: ServiceProcess
    private var client: RPCClient
    private var retiredClients: [RPCClient] = []
    private(set) var generation = 0
    private var crashed: Set<Int> = []
    private var restartError: (any Error)?
    private var waiters: [(after: Int, continuation: CheckedContinuation<Void, Never>)] = []
    /// SIGKILLs sent by `crash()`.
    private(set) var kills = 0

    /// Starts the first process and waits until it listens.
    init(name: String, environment: [String: String]) async throws {
        self.name = name
        self.environment = environment
        (process, client) = try await Self.launch(environment)
    }

    private static func launch(_ environment: [String: String]) async throws -> (ServiceProcess, RPCClient) {
        let process = try ServiceProcess("ledger", environment: environment)
        let port = try await process.rpcPort()
        return (process, try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: port)]))
    }

    /// The running generation and its client.
    func current() -> (generation: Int, client: RPCClient) { (generation, client) }

    /// Whether the test crashed this generation (so failed calls on it are expected).
    func wasCrashed(_ generation: Int) -> Bool { crashed.contains(generation) }

    /// The first generation after `generation`, waiting for the restart; throws when the
    /// restart failed.
    func client(after generation: Int) async throws -> (generation: Int, client: RPCClient) {
        if self.generation <= generation && restartError == nil {
            await withCheckedContinuation { waiters.append((generation, $0)) }
        }
        if let restartError { throw restartError }
        return (self.generation, client)
    }

    /// SIGKILLs the running process, waits for it to end, and starts the next generation.
    func crash() async throws {
        crashed.insert(generation)
        process.kill()
        kills += 1
        let status = await process.waitForExit()
        #expect(status == SIGKILL, "\(name) ended with status \(status), not by SIGKILL")
        retiredClients.append(client)
        do {
            (process, client) = try await Self.launch(environment)
        } catch {
            restartError = error
            resumeWaiters()
            throw error
        }
        generation += 1
        resumeWaiters()
    }

    private func resumeWaiters() {
        let ready = waiters.filter { restartError != nil || $0.after < generation }
        waiters.removeAll { restartError != nil || $0.after < generation }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Ends the running process (SIGKILL when `crash` is true, else SIGTERM) and closes every
    /// client; returns the exit status.
    func stop(crash: Bool) async -> Int32 {
        crashed.insert(generation)
        if crash { process.kill() } else { process.terminate() }
        let status = await process.waitForExit()
        for client in retiredClients + [client] { client.shutdown() }
        retiredClients = []
        return status
    }
}

extension RestartableLedger {
    /// Sends `request` until it is answered: a call that fails because the test crashed the
    /// ledger is sent again, unchanged, to the next generation. Returns the answer and how many
    /// times the request was sent. Other failures are thrown.
    nonisolated func callAcrossCrashes<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ request: Request, as: Response.Type
    ) async throws -> (response: Response, sends: Int) {
        var (generation, client) = await current()
        var sends = 0
        while true {
            sends += 1
            do {
                return (try await client.call(method, request, as: Response.self, timeout: .seconds(30)), sends)
            } catch {
                guard await wasCrashed(generation) else { throw error }
                (generation, client) = try await self.client(after: generation)
            }
        }
    }
}
