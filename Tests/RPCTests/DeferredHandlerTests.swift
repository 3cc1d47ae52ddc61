import Dispatch
import RPC
import Testing
import Wire

/// Deferred methods start on the event loop and answer from another thread.
@Suite("RPC deferred handlers")
struct DeferredHandlerTests {
    static let reverse = "test.Test/DeferredReverse"
    static let failing = "test.Test/DeferredFailing"
    static let dropped = "test.Test/DeferredDropped"
    static let twice = "test.Test/DeferredTwice"
    static let never = "test.Test/DeferredNever"

    /// Holds responders that must stay unanswered until the test lets them go.
    final class Parking: Sendable {
        let held = Recorder<RPCResponder>()
    }

    static func server(parking: Parking) throws -> TestServer {
        try TestServer(extra: { router in
            let worker = DispatchQueue(label: "deferred-test-worker")
            router.register(
                reverse,
                .deferred { _, bytes, responder in
                    let payload = [UInt8](bytes)
                    worker.async { responder.succeed(payload.reversed()) }
                })
            router.register(
                failing,
                .deferred { _, _, responder in
                    worker.async { responder.fail(RPCError(.failedPrecondition, "the work says no")) }
                })
            router.register(dropped, .deferred { _, _, _ in })
            router.register(
                twice,
                .deferred { _, _, responder in
                    responder.succeed([1])
                    responder.succeed([2])
                    responder.fail(RPCError(.internal, "too late"))
                })
            router.register(never, .deferred { _, _, responder in parking.held.add(responder) })
        })
    }

    @Test("a reply produced on another thread reaches the caller")
    func answeredElsewhere() async throws {
        let test = try Self.server(parking: Parking())
        let client = try test.client()
        let reply = try await client.unary(Self.reverse, request: [1, 2, 3])
        #expect(reply == [3, 2, 1])
        await test.server.shutdown()
    }

    @Test("an error keeps its status and message")
    func failure() async throws {
        let test = try Self.server(parking: Parking())
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(5, Self.failing))
        let reply = try #require(try await connection.readReply())
        #expect(
            reply
                == Reply(
                    callID: 5, kind: .response, code: .failedPrecondition, message: "the work says no", payload: []))
        await test.server.shutdown()
    }

    @Test("a responder released unanswered answers INTERNAL instead of leaving the caller waiting")
    func dropped() async throws {
        let test = try Self.server(parking: Parking())
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(7, Self.dropped))
        let reply = try #require(try await connection.readReply())
        #expect(
            reply
                == Reply(
                    callID: 7, kind: .response, code: .internal, message: "the method ended without an answer",
                    payload: []))
        await test.server.shutdown()
    }

    @Test("only the first answer counts")
    func firstAnswerWins() async throws {
        let test = try Self.server(parking: Parking())
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(9, Self.twice))
        connection.send(RawConnection.request(10, TestMethods.echo, payload: [42]))
        let first = try #require(try await connection.readReply())
        let second = try #require(try await connection.readReply())
        let replies = [first, second].sorted { $0.callID < $1.callID }
        #expect(replies[0] == Reply(callID: 9, kind: .response, code: .ok, message: "", payload: [1]))
        #expect(replies[1] == Reply(callID: 10, kind: .response, code: .ok, message: "", payload: [42]))
        await test.server.shutdown()
    }

    @Test("the deadline answers DEADLINE_EXCEEDED and a late answer is dropped")
    func deadline() async throws {
        let parking = Parking()
        let test = try Self.server(parking: parking)
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(11, Self.never, timeoutMilliseconds: 50))
        let reply = try #require(try await connection.readReply())
        #expect(
            reply
                == Reply(
                    callID: 11, kind: .response, code: .deadlineExceeded, message: "deadline of 50 ms exceeded",
                    payload: []))
        for responder in parking.held.all { responder.succeed([9]) }
        connection.send(RawConnection.request(12, TestMethods.echo, payload: [12]))
        let next = try #require(try await connection.readReply())
        #expect(next == Reply(callID: 12, kind: .response, code: .ok, message: "", payload: [12]))
        await test.server.shutdown()
    }
}
