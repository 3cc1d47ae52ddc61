import Config
import Foundation
import Glibc
import RPC
import Testing
import Wire

@Suite("RPC limits")
struct RPCLimitsTests {
    @Test("cancelled calls whose handlers still run count against the per-connection cap")
    func cancelledHandlersCount() async throws {
        let test = try TestServer { $0.maxCallsPerConnection = 2 }
        let connection = try RawConnection(port: test.server.port)
        var frames: [UInt8] = []
        for id: UInt64 in [1, 2] {
            frames += RawConnection.request(id, TestMethods.held)
            Envelope.appendFrame(to: &frames, callID: id, kind: .cancel)
        }
        frames += RawConnection.request(3, TestMethods.held)
        connection.send(frames)
        let reply = try #require(try await connection.readReply())
        #expect(reply.callID == 3)
        #expect(reply.code == .resourceExhausted)
        test.gate.open()
        await test.server.shutdown()
    }

    @Test("a call from an already cancelled task fails at once without reaching the server")
    func alreadyCancelled() async throws {
        let test = try TestServer()
        let client = try test.client()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.unary(TestMethods.held, request: [])
        }
        await #expect(throws: RPCError(.cancelled, "the caller cancelled the call")) { _ = try await task.value }
        #expect(test.gate.cancelledCount == 0)
        var text = MetricsTextProbe()
        text.render(test.server)
        #expect(!text.output.contains("test.v1.Test/Held"))
        await test.server.shutdown()
    }

    @Test("cancelling the task that reads a quiet stream ends the stream with CANCELLED")
    func cancelStreamReader() async throws {
        let test = try TestServer()
        let client = try test.client { $0.streamWindow = 2 }
        let reader = Task { () -> RPCError? in
            do {
                // The held stream never sends: the reader waits.
                for try await _ in client.serverStream(TestMethods.held, request: []) {}
                return nil
            } catch {
                return error as? RPCError
            }
        }
        await test.gate.waitForArrivals(1)
        reader.cancel()
        #expect(await reader.value == RPCError(.cancelled, "the stream was cancelled"))
        test.gate.open()
        await test.server.shutdown()
    }

    @Test("a request larger than a frame fails alone with RESOURCE_EXHAUSTED; the connection stays usable")
    func oversizedRequest() async throws {
        let test = try TestServer()
        let client = try test.client { $0.maxFrameLength = 4096 }
        await #expect(
            throws: RPCError(
                .resourceExhausted, "the request of 5000 bytes does not fit in the maximum frame length of 4096")
        ) {
            _ = try await client.unary(TestMethods.echo, request: [UInt8](repeating: 1, count: 5000))
        }
        #expect(try await client.unary(TestMethods.echo, request: [2]) == [2])
        await test.server.shutdown()
    }

    @Test("a response larger than a frame is RESOURCE_EXHAUSTED for that call only")
    func oversizedResponse() async throws {
        let test = try TestServer(
            { $0.maxFrameLength = 4096 },
            extra: { router in
                router.register(
                    "test.v1.Test/Big",
                    .inline { _, output in output.append(contentsOf: repeatElement(0, count: 8000)) })
            })
        let connection = try RawConnection(port: test.server.port)
        connection.send(RawConnection.request(1, "test.v1.Test/Big"))
        let reply = try #require(try await connection.readReply())
        #expect(reply.code == .resourceExhausted)
        #expect(reply.message == "the response of 8000 bytes does not fit in the maximum frame length of 4096")
        connection.send(RawConnection.request(2, TestMethods.echo, payload: [3]))
        #expect(try await connection.readReply()?.payload == [3])
        await test.server.shutdown()
    }

    @Test("a timeout of practically forever does not overflow")
    func hugeTimeout() async throws {
        let test = try TestServer()
        let client = try test.client()
        #expect(try await client.unary(TestMethods.echo, request: [1], timeout: .seconds(Int64.max)) == [1])
        await test.server.shutdown()
    }
}
