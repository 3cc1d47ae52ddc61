import Foundation
import Glibc
import RPC
import Testing
import Wire

@Suite("RPC server")
struct RPCServerTests {
    @Test(
        "a method's prefetch sees the payloads of the frames read together, run by run (not a lone one), before any is handled"
    )
    func prefetchSeesBatchFirst() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        // One write: three calls of the prefetched method around one of a method without prefetch.
        connection.send(
            RawConnection.request(1, TestMethods.prefetched, payload: [1])
                + RawConnection.request(2, TestMethods.prefetched, payload: [2])
                + RawConnection.request(3, TestMethods.echo, payload: [9])
                + RawConnection.request(4, TestMethods.prefetched, payload: [3]))
        var replies: [UInt64: [UInt8]] = [:]
        for _ in 0..<4 {
            let reply = try #require(try await connection.readReply())
            #expect(reply.code == .ok)
            replies[reply.callID] = reply.payload
        }
        #expect(replies == [1: [1], 2: [2], 3: [9], 4: [3]])
        // The run of 1 and 2 is prefetched for; 3 stands alone after the echo, so it is not.
        #expect(test.prefetchLog.all == ["prefetch 1,2", "handle 1", "handle 2", "handle 3"])
    }

    @Test(
        "with a prefetching method, frames split across reads are each answered for their own call: no reading of an earlier read's frame is taken for a later one"
    )
    func prefetchAcrossReads() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        let first = RawConnection.request(1, TestMethods.prefetched, payload: [1])
        let second = RawConnection.request(2, TestMethods.prefetched, payload: [2])
        let third = RawConnection.request(3, TestMethods.prefetched, payload: [3, 3, 3])
        // The same length as the first frame, read from the same buffer later.
        let fourth = RawConnection.request(5, TestMethods.prefetched, payload: [4])
        #expect(fourth.count == first.count)
        connection.send(first + second + third.prefix(5))
        var replies: [UInt64: [UInt8]] = [:]
        for _ in 0..<2 {
            let reply = try #require(try await connection.readReply())
            replies[reply.callID] = reply.payload
        }
        connection.send(Array(third.dropFirst(5)))
        let completed = try #require(try await connection.readReply())
        replies[completed.callID] = completed.payload
        connection.send(fourth)
        let last = try #require(try await connection.readReply())
        #expect(last.code == .ok)
        replies[last.callID] = last.payload
        #expect(replies == [1: [1], 2: [2], 3: [3, 3, 3], 5: [4]])
        #expect(test.prefetchLog.all == ["prefetch 1,2", "handle 1", "handle 2", "handle 3", "handle 4"])
    }

    @Test("1,000 concurrent calls on one connection each get their own reply")
    func thousandConcurrentCalls() async throws {
        let test = try TestServer()
        let client = try test.client()
        let replies = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for index in 0..<1000 {
                group.addTask {
                    let payload = [UInt8(index % 251), UInt8(index / 256), UInt8(index % 256)]
                    return (index, try await client.unary(TestMethods.echoAsync, request: payload))
                }
            }
            var replies: [Int: [UInt8]] = [:]
            for try await (index, reply) in group { replies[index] = reply }
            return replies
        }
        #expect(replies.count == 1000)
        for (index, reply) in replies {
            #expect(reply == [UInt8(index % 251), UInt8(index / 256), UInt8(index % 256)])
        }
        await test.server.shutdown()
    }

    @Test("replies come back in completion order, not request order")
    func outOfOrderReplies() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(1, TestMethods.held, payload: [1]))
        await test.gate.waitForArrivals(1)
        connection.send(RawConnection.request(2, TestMethods.echo, payload: [2]))
        let first = try #require(try await connection.readReply())
        #expect(first.callID == 2 && first.payload == [2])
        test.gate.open()
        let second = try #require(try await connection.readReply())
        #expect(second.callID == 1 && second.payload == [1])
        await test.server.shutdown()
    }

    @Test("a deadline shorter than the handler's work yields DEADLINE_EXCEEDED and cancels the handler")
    func deadlineExceeded() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(1, TestMethods.held, timeoutMilliseconds: 50))
        let reply = try #require(try await connection.readReply())
        #expect(
            reply
                == Reply(
                    callID: 1, kind: .response, code: .deadlineExceeded, message: "deadline of 50 ms exceeded",
                    payload: []))
        await test.gate.waitForArrivals(1)
        #expect(test.gate.cancelledCount == 1)
        test.gate.open()
        await test.server.shutdown()
    }

    @Test("the client gives up at its own deadline even when the server never answers")
    func clientDeadline() async throws {
        let test = try TestServer { $0.maxTimeout = .seconds(60) }
        let client = try test.client()
        // The server allows 60 s; the raw envelope from the client says 80 ms.
        let started = ContinuousClock.now
        await #expect {
            _ = try await client.unary(TestMethods.held, request: [], timeout: .milliseconds(80))
        } throws: { error in
            (error as? RPCError)?.code == .deadlineExceeded
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        test.gate.open()
        await test.server.shutdown()
    }

    @Test("a deadline propagates: a call made inside a handler inherits the caller's remaining time")
    func deadlinePropagates() async throws {
        let downstream = try TestServer()
        let downstreamClient = try downstream.client()
        let upstream = try TestServer(extra: { router in
            router.register(
                "test.v1.Test/Forward",
                .unary { _, _ in try await downstreamClient.unary(TestMethods.remaining, request: []) })
        })
        let client = try upstream.client()
        // Generous, so a loaded machine does not turn the check into a timeout.
        _ = try await client.unary("test.v1.Test/Forward", request: [], timeout: .seconds(10))
        let seen = try #require(downstream.remaining.all.first)
        #expect(seen <= 10_000 && seen > 0, "downstream saw \(seen) ms")
        await upstream.server.shutdown()
        await downstream.server.shutdown()
    }

    @Test("an unknown method is UNIMPLEMENTED and names the method")
    func unknownMethod() async throws {
        let test = try TestServer()
        let client = try test.client()
        await #expect(throws: RPCError(.unimplemented, "unknown method \"test.v1.Test/Nope\"")) {
            _ = try await client.unary("test.v1.Test/Nope", request: [])
        }
        await test.server.shutdown()
    }

    @Test("a payload that does not parse is INVALID_ARGUMENT with the reason, and the connection stays usable")
    func malformedPayload() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(1, TestMethods.health, payload: [0x0a, 0x05, 0x01]))
        let reply = try #require(try await connection.readReply())
        #expect(reply.callID == 1)
        #expect(reply.code == .invalidArgument)
        #expect(
            reply.message
                == "payload is not a valid subscriptions.common.v1.HealthRequest: field 1 at byte 0 declares 5 bytes but 1 remain"
        )
        connection.send(RawConnection.request(2, TestMethods.echo, payload: [9]))
        #expect(
            try await connection.readReply() == Reply(callID: 2, kind: .response, code: .ok, message: "", payload: [9]))
        await test.server.shutdown()
    }

    @Test(
        "bad framing is answered with a connection error naming the problem, then the connection closes",
        arguments: [
            ([0x00, 0x20, 0x00, 0x01], "protocol violation"),
            ([0, 0, 0, 0], "frame length 0"),
            ([0, 0, 0, 2, 0x0f, 0xff], "unsupported wire type 7"),
            ([0, 0, 0, 4, 0x08, 0x01, 0x10, 0x02], "a client may not send frame kind 2"),
        ] as [([UInt8], String)])
    func badFraming(bytes: [UInt8], expected: String) async throws {
        let test = try TestServer { $0.maxFrameLength = 1024 }
        let bad = try RawConnection(port: test.server.port)
        let good = try RawConnection(port: test.server.port)
        bad.send(bytes)
        if expected == "protocol violation" {
            let reply = try #require(try await bad.readReply())
            #expect(reply.callID == 0)
            #expect(reply.code == .invalidArgument)
            #expect(reply.message == "frame length 2097153 exceeds the maximum of 1024 bytes")
        } else {
            let reply = try #require(try await bad.readReply())
            #expect(reply.callID == 0 && reply.code == .invalidArgument)
            #expect(reply.message.contains(expected), "\(reply.message)")
        }
        #expect(await bad.isClosedByPeer())
        // The server keeps serving others.
        good.send(RawConnection.request(5, TestMethods.echo, payload: [5]))
        #expect(try await good.readReply()?.payload == [5])
        await test.server.shutdown()
    }

    @Test("a truncated frame followed by a disconnect changes nothing; the server keeps serving")
    func truncatedThenClosed() async throws {
        let test = try TestServer()
        do {
            let connection = try RawConnection(port: test.server.port)
            connection.send(Array(RawConnection.request(1, TestMethods.echo, payload: [1, 2, 3]).dropLast(2)))
        }
        let client = try test.client()
        #expect(try await client.unary(TestMethods.echo, request: [7]) == [7])
        await test.server.shutdown()
    }

    @Test("a client that dribbles one byte at a time is cut off at the read deadline while others are served")
    func dribblingClient() async throws {
        // The server's time is the test's: 50 ms pass between two bytes.
        let clock = ManualClock()
        let test = try TestServer {
            $0.readTimeout = .milliseconds(300)
            $0.clock = clock
        }
        let slow = try RawConnection(port: test.server.port)
        let client = try test.client()
        let frame = RawConnection.request(1, TestMethods.echo, payload: Array(repeating: 1, count: 64))
        // Six bytes in 250 ms: inside the deadline, the connection stays.
        for sent in 1...6 {
            slow.send([frame[sent - 1]])
            // Others keep getting answers while the slow client dribbles (the answer also
            // shows that the server has read the byte).
            #expect(try await client.unary(TestMethods.echo, request: [UInt8(sent)]) == [UInt8(sent)])
            if sent < 6 { clock.advance(by: .milliseconds(50)) }
            var probe: UInt8 = 0
            #expect(recv(slow.fd, &probe, 1, Int32(MSG_DONTWAIT)) == -1 && errno == EAGAIN, "closed at byte \(sent)")
        }
        // Past the deadline (and the sweep a quarter of it later) the frame is cut.
        clock.advance(by: .milliseconds(150))
        #expect(await slow.isClosedByPeer())
        await test.server.shutdown()
    }

    @Test("a connection that stays silent is closed at the idle timeout")
    func idleTimeout() async throws {
        let test = try TestServer { $0.idleTimeout = .milliseconds(200) }
        let connection = try RawConnection(port: test.server.port, timeout: 20)
        let started = ContinuousClock.now
        #expect(await connection.isClosedByPeer())
        let elapsed = ContinuousClock.now - started
        // The upper bound only tells "at the timeout" from "never" on a loaded machine.
        #expect(elapsed >= .milliseconds(150) && elapsed < .seconds(15), "closed after \(elapsed)")
        await test.server.shutdown()
    }

    @Test("calls beyond the per-connection cap get RESOURCE_EXHAUSTED")
    func callCap() async throws {
        let test = try TestServer { $0.maxCallsPerConnection = 2 }
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(1, TestMethods.held))
        connection.send(RawConnection.request(2, TestMethods.held))
        connection.send(RawConnection.request(3, TestMethods.held))
        let refused = try #require(try await connection.readReply())
        #expect(refused.callID == 3)
        #expect(refused.code == .resourceExhausted)
        #expect(refused.message == "too many calls in flight on this connection (at most 2)")
        test.gate.open()
        let firstID = try await connection.readReply()?.callID
        let secondID = try await connection.readReply()?.callID
        let ids = Set([firstID, secondID])
        #expect(ids == [1, 2])
        await test.server.shutdown()
    }

    @Test("at the cap, the connection silent longest is closed to admit the new one")
    func connectionCapEvictsIdle() async throws {
        let test = try TestServer { $0.maxConnections = 1 }
        let first = try RawConnection(port: test.server.port)
        first.send(RawConnection.request(1, TestMethods.echo, payload: [1]))
        #expect(try await first.readReply()?.payload == [1])
        let second = try RawConnection(port: test.server.port)
        #expect(await first.isClosedByPeer())
        second.send(RawConnection.request(1, TestMethods.echo, payload: [2]))
        #expect(try await second.readReply()?.payload == [2])
        await test.server.shutdown()
    }

    @Test("at the cap with a call in flight on every connection, a new one is closed at once")
    func connectionCapRefusesWhenBusy() async throws {
        let test = try TestServer { $0.maxConnections = 1 }
        let first = try RawConnection(port: test.server.port)
        first.send(RawConnection.request(1, TestMethods.held, payload: [1]))
        await test.gate.waitForArrivals(1)
        let second = try RawConnection(port: test.server.port)
        #expect(await second.isClosedByPeer())
        test.gate.open()
        #expect(try await first.readReply()?.payload == [1])
        await test.server.shutdown()
    }

    @Test("shutdown lets calls in flight finish, refuses new ones, then stops")
    func gracefulShutdown() async throws {
        let test = try TestServer { $0.shutdownGracePeriod = .seconds(10) }
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(1, TestMethods.held, payload: [4]))
        await test.gate.waitForArrivals(1)
        let shutdown = Task { await test.server.shutdown() }
        while !test.server.isDraining { await Task.yield() }
        // New calls on the open connection are refused while the first one runs.
        connection.send(RawConnection.request(10, TestMethods.echo, payload: [1]))
        let refused = try #require(try await connection.readReply())
        #expect(
            refused
                == Reply(
                    callID: 10, kind: .response, code: .unavailable, message: "the server is shutting down", payload: []
                ))
        test.gate.open()
        let finished = try #require(try await connection.readReply())
        #expect(finished == Reply(callID: 1, kind: .response, code: .ok, message: "", payload: [4]))
        await shutdown.value
        #expect(await connection.isClosedByPeer())
    }

    @Test("a server stream delivers every message in order and ends OK")
    func serverStream() async throws {
        let test = try TestServer()
        let client = try test.client { $0.streamWindow = 4 }
        var received: [UInt8] = []
        for try await message in client.serverStream(TestMethods.count, request: [20]) {
            received += message
        }
        #expect(received == (0..<200).map { UInt8($0) })
        await test.server.shutdown()
    }

    @Test("a stream whose reader does not read stops at the granted window")
    func streamFlowControl() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        var frame: [UInt8] = []
        TestMethods.count.withCString { method in
            [UInt8(10)].withUnsafeBytes { payload in
                Envelope.appendFrame(to: &frame, callID: 1, kind: .request, method: method, payload: payload, window: 3)
            }
        }
        connection.send(frame)
        for index in 0..<3 { #expect(try await connection.readReply()?.payload == [UInt8(index)]) }
        // No credit left: nothing more arrives (the handler is suspended in send).
        connection.setReadTimeout(milliseconds: 300)
        #expect(try await connection.readReply() == nil)
        #expect(test.streamSent.all.count == 3)
        var grant: [UInt8] = []
        Envelope.appendFrame(to: &grant, callID: 1, kind: .windowUpdate, window: 2)
        connection.send(grant)
        connection.setReadTimeout(milliseconds: 5000)
        for index in 3..<5 { #expect(try await connection.readReply()?.payload == [UInt8(index)]) }
        await test.server.shutdown()
    }

    @Test("metrics count calls by method and status, connections, and rejected frames")
    func metrics() async throws {
        // Small frames only: a client's request (method, traceparent, a byte) fits in 128 bytes.
        let test = try TestServer { $0.maxFrameLength = 128 }
        let client = try test.client()
        _ = try await client.unary(TestMethods.echo, request: [1])
        _ = try? await client.unary("test.v1.Test/Nope", request: [])
        // Two calls and then an empty frame in one write: the calls are answered and counted
        // although the read ends in a protocol violation.
        let bad = try RawConnection(port: test.server.port)
        bad.send(
            RawConnection.request(1, TestMethods.echo, payload: [2]) + RawConnection.request(2, TestMethods.echo)
                + [0, 0, 0, 0])
        #expect(try await bad.readReply()?.payload == [2])
        #expect(try await bad.readReply()?.callID == 2)
        #expect(try await bad.readReply()?.code == .invalidArgument)
        #expect(await bad.isClosedByPeer())
        var text = MetricsTextProbe()
        text.render(test.server)
        #expect(text.output.contains("rpc_server_calls_total{code=\"OK\",method=\"test.v1.Test/Echo\"} 3\n"))
        #expect(text.output.contains("rpc_server_calls_total{code=\"UNIMPLEMENTED\",method=\"unknown\"} 1\n"))
        #expect(text.output.contains("rpc_server_call_duration_seconds_count{method=\"test.v1.Test/Echo\"} 3\n"))
        #expect(text.output.contains("rpc_server_connections_accepted_total 2\n"))
        #expect(text.output.contains("rpc_server_frames_rejected_total{reason=\"empty\"} 1\n"))
        await test.server.shutdown()
    }
}
