import RPC
import Testing
import Wire

/// The in-process transport: a server's router called directly, held to what a call over TCP
/// is held to (the access policy, the method, its request limit, the deadline), with the same
/// statuses. No port is bound.
@Suite("In-process transport")
struct InProcessTransportTests {
    static func method(_ name: String) -> UnaryMethod<RawMessage, RawMessage> { UnaryMethod(name) }

    @Test("unary calls of every handler kind answer as over TCP; no port is bound")
    func unary() async throws {
        let server = try TestServer(listen: false)
        #expect(server.server.port == 0)
        let transport = InProcessTransport(server: server.server)
        let echoed = try await transport.call(Self.method(TestMethods.echo), RawMessage(bytes: [1, 2, 3]))
        #expect(echoed.bytes == [1, 2, 3])
        let later = try await transport.call(Self.method(TestMethods.echoAsync), RawMessage(bytes: [5, 9]))
        #expect(later.bytes == [5, 9])
        let health = try await transport.call(UnaryMethod<HealthRequest, HealthResponse>(TestMethods.health), .init())
        #expect(health.service == "test")
    }

    @Test("an unknown method is UNIMPLEMENTED; a request past its method's limit is RESOURCE_EXHAUSTED")
    func admission() async throws {
        let server = try TestServer(listen: false) { _ in
        } extra: { router in
            router.register(
                "test.v1.Test/Small", .inline { bytes, output in output.append(contentsOf: bytes) },
                limits: RPCMethodLimits(maxRequestBytes: 4))
        }
        let transport = InProcessTransport(server: server.server)
        let unknown = await Self.failure {
            _ = try await transport.call(Self.method("test.v1.Test/Nope"), RawMessage(bytes: []))
        }
        #expect(unknown == RPCError(.unimplemented, #"unknown method "test.v1.Test/Nope""#))
        let large = await Self.failure {
            _ = try await transport.call(Self.method("test.v1.Test/Small"), RawMessage(bytes: [1, 2, 3, 4, 5]))
        }
        #expect(
            large
                == RPCError(
                    .resourceExhausted, "a request of 5 bytes for test.v1.Test/Small exceeds its limit of 4 bytes"))
        let fits = try await transport.call(Self.method("test.v1.Test/Small"), RawMessage(bytes: [1, 2, 3, 4]))
        #expect(fits.bytes == [1, 2, 3, 4])
    }

    @Test("a caller with identities is held to the access policy; one with none is UNAUTHENTICATED")
    func accessPolicy() async throws {
        let server = try TestServer(listen: false) { configuration in
            configuration.accessPolicy = try! AccessPolicy(parsing: "test.v1.Test/Echo=verifier")
        }
        func call(_ identities: [String]?) async -> RPCError? {
            let transport = InProcessTransport(
                server: server.server, caller: RPCCaller(identities: identities, peer: "test"))
            return await Self.failure {
                _ = try await transport.call(Self.method(TestMethods.echo), RawMessage(bytes: [1]))
            }
        }
        #expect(await call(["verifier"]) == nil)
        #expect(await call(["crm"]) == RPCError(.permissionDenied, "crm may not call test.v1.Test/Echo"))
        #expect(await call([]) == RPCError(.unauthenticated, "the caller has no identity"))
        // A transport that authenticates nobody, on a server without TLS: as a plaintext connection.
        #expect(await call(nil) == nil)
    }

    @Test("a call past its deadline is DEADLINE_EXCEEDED and its handler is cancelled")
    func deadline() async throws {
        let clock = ManualClock()
        let server = try TestServer(listen: false) { $0.clock = clock }
        let transport = InProcessTransport(server: server.server)
        let call = Task {
            await Self.failure {
                _ = try await transport.call(
                    Self.method(TestMethods.held), RawMessage(bytes: [1]), timeout: .milliseconds(20))
            }
        }
        await server.gate.waitForArrivals(1)
        // The handler waits at the gate; the deadline comes when the server's clock reaches it.
        while clock.sleepers == 0 { await Task.yield() }
        clock.advance(by: .milliseconds(19))
        #expect(server.gate.cancelledCount == 0)
        clock.advance(by: .milliseconds(1))
        let error = await call.value
        #expect(error == RPCError(.deadlineExceeded, "deadline of 20 ms exceeded"))
        while server.gate.cancelledCount == 0 { await Task.yield() }
        #expect(server.gate.cancelledCount == 1)
    }

    @Test("the handler sees the caller's timeout as its deadline")
    func remaining() async throws {
        let server = try TestServer(listen: false)
        let transport = InProcessTransport(server: server.server)
        _ = try await transport.call(Self.method(TestMethods.remaining), RawMessage(bytes: []), timeout: .seconds(30))
        let left = try #require(server.remaining.all.first)
        #expect(left > 20_000 && left <= 30_000)
    }

    @Test("a server stream yields its messages in order and ends; a unary method is not a stream")
    func stream() async throws {
        let server = try TestServer(listen: false)
        let transport = InProcessTransport(server: server.server)
        var received: [UInt8] = []
        for try await message in transport.serverStream(
            ServerStreamMethod<RawMessage, RawMessage>(TestMethods.count), RawMessage(bytes: [3]))
        {
            received += message
        }
        #expect(received == (0..<30).map { UInt8($0) })
        var iterator = transport.serverStream(
            ServerStreamMethod<RawMessage, RawMessage>(TestMethods.echo), RawMessage(bytes: [1])
        ).makeAsyncIterator()
        let error = await Self.failure { _ = try await iterator.next() }
        #expect(error == RPCError(.unimplemented, "test.v1.Test/Echo is not a server stream"))
    }

    /// The error `body` threw, or nil when it returned.
    static func failure(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }
}
