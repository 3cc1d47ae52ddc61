import Config
import Foundation
import RPC
import Sockets
import TestSupport
import Testing
import Wire

@Suite("RPC client")
struct RPCClientTests {
    @Test("calls are spread round-robin over every endpoint")
    func roundRobin() async throws {
        let first = try TestServer()
        let second = try TestServer()
        let client = try RPCClient(endpoints: [first.endpoint, second.endpoint])
        try await expectSpread(client, over: first, second)
    }

    /// Makes 20 calls and checks both servers took a fair share; then stops them.
    func expectSpread(_ client: RPCClient, over first: TestServer, _ second: TestServer) async throws {
        for _ in 0..<20 { _ = try await client.unary(TestMethods.echo, request: [1]) }
        var text = MetricsTextProbe()
        text.render(first.server)
        let firstCount = callCount(text.output)
        text.render(second.server)
        let secondCount = callCount(text.output)
        #expect(firstCount + secondCount == 20)
        #expect(firstCount >= 8 && secondCount >= 8, "\(firstCount) vs \(secondCount)")
        await first.server.shutdown()
        await second.server.shutdown()
    }

    func callCount(_ metrics: String) -> Int {
        let prefix = "rpc_server_calls_total{code=\"OK\",method=\"test.v1.Test/Echo\"} "
        guard let line = metrics.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return 0 }
        return Int(line.dropFirst(prefix.count)) ?? 0
    }

    @Test("a name with several addresses counts as several endpoints, and calls are spread over them")
    func nameWithSeveralAddresses() async throws {
        let first = try TestServer()
        let second = try TestServer()
        let addresses = try [first, second].flatMap {
            try SocketAddress.resolve(host: "127.0.0.1", port: $0.server.port)
        }
        var configuration = RPCClientConfiguration()
        // One name, two addresses, as a DNS name of a scaled-out service would have.
        configuration.resolver = { host, _ in host == "verifiers.internal" ? addresses : [] }
        let client = try RPCClient(
            endpoints: [HostPort(host: "verifiers.internal", port: 7001)], configuration: configuration)
        try await expectSpread(client, over: first, second)
    }

    @Test("the system resolver finds loopback")
    func systemResolver() throws {
        let addresses = try SocketAddress.resolve(host: "localhost", port: 7000)
        #expect(addresses.contains { $0.description == "127.0.0.1:7000" })
        #expect(Set(addresses).count == addresses.count)
    }

    @Test("nothing reachable fails fast with UNAVAILABLE naming each endpoint and its error")
    func nothingReachable() async throws {
        // Ports held by bound sockets that never listen: a connection is refused, and no other
        // socket of the test run can take the port meanwhile (a port closed and given back could).
        let held = try [HeldPort(), HeldPort()]
        defer { withExtendedLifetime(held) {} }
        let ports = held.map(\.port)
        let client = try RPCClient(endpoints: ports.map { HostPort(host: "127.0.0.1", port: $0) })
        let started = ContinuousClock.now
        await #expect {
            _ = try await client.unary(TestMethods.echo, request: [1], timeout: .seconds(10))
        } throws: { error in
            // Each address with its error and when the next attempt is due.
            let pattern =
                "^no endpoint reachable: 127.0.0.1:\(ports[0]): Connection refused \\(next attempt in [0-9]+ ms\\); "
                + "127.0.0.1:\(ports[1]): Connection refused \\(next attempt in [0-9]+ ms\\)$"
            guard let error = error as? RPCError else { return false }
            return error.code == .unavailable && error.message.range(of: pattern, options: .regularExpression) != nil
        }
        // Long before the call's 10 s timeout (the bound leaves room for a loaded machine).
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test("an unresolvable name is reported as such")
    func unresolvable() async throws {
        let client = try RPCClient(endpoints: [HostPort(host: "no-such-host.invalid", port: 1)])
        await #expect {
            _ = try await client.unary(TestMethods.echo, request: [1])
        } throws: { error in
            guard let error = error as? RPCError else { return false }
            return error.code == .unavailable
                && error.message.hasPrefix("no endpoint reachable: no-such-host.invalid:1: cannot resolve")
        }
    }

    @Test("the client reconnects after the server restarts on the same port")
    func reconnects() async throws {
        let first = try TestServer()
        let port = first.server.port
        // The client's backoff runs on a clock the test moves: a failed endpoint is tried
        // again only once its backoff has passed.
        let clock = ManualClock()
        var configuration = RPCClientConfiguration()
        configuration.initialBackoff = .milliseconds(1)
        configuration.maxBackoff = .milliseconds(20)
        configuration.clock = clock
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: port)], configuration: configuration)
        #expect(try await client.unary(TestMethods.echo, request: [1]) == [1])
        await first.server.shutdown()
        await #expect(throws: RPCError.self) { _ = try await client.unary(TestMethods.echo, request: [2]) }
        let second = try TestServer { $0.port = port }
        clock.advance(by: .milliseconds(20))
        #expect(try await client.unary(TestMethods.echo, request: [3]) == [3])
        await second.server.shutdown()
    }

    @Test("cancelling the calling task cancels the call on the server")
    func cancellation() async throws {
        let test = try TestServer()
        let client = try test.client()
        let task = Task { try await client.unary(TestMethods.held, request: []) }
        await test.gate.waitForArrivals(1)
        task.cancel()
        await #expect(throws: RPCError(.cancelled, "the caller cancelled the call")) { _ = try await task.value }
        test.gate.open()
        await test.server.shutdown()
    }

    @Test("a stream ends with UNAVAILABLE when the server shuts down")
    func streamEndsOnShutdown() async throws {
        let test = try TestServer()
        let client = try test.client { $0.streamWindow = 2 }
        let stream = client.serverStream(TestMethods.count, request: [100])
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next() == [0])
        await test.server.shutdown()
        var ending: RPCError?
        do {
            while try await iterator.next() != nil {}
        } catch {
            ending = error
        }
        #expect(ending == RPCError(.unavailable, "the server is shutting down"))
    }

    /// A TCP socket bound to a free loopback port and not listening, and the port.
}
