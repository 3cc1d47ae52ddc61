import Dispatch
import RPC
import Synchronization
import Testing
import Wire

/// An inline handler that cannot answer on the event loop hands its call off (`RPCHandOff`): the
/// call is answered later, from another thread, over TCP and in process alike; the calls that
/// answer inline stay inline.
@Suite("Inline hand-off")
struct HandOffTests {
    static let name = "test.v1.Test/MaybeLater"

    /// The responders of the calls handed off, for the test to answer.
    final class Parked: Sendable {
        let responders = Mutex<[(RPCResponder, [UInt8])]>([])
        func count() -> Int { responders.withLock { $0.count } }
        func answerAll() {
            for (responder, bytes) in responders.withLock({ list in
                defer { list = [] }
                return list
            }) {
                responder.succeed(bytes.reversed())
            }
        }
    }

    /// A method answering a first byte 0 at once (the bytes back) and handing anything else off.
    static func server(_ parked: Parked, listen: Bool) throws -> TestServer {
        try TestServer(listen: listen) { _ in
        } extra: { router in
            router.register(
                Self.name,
                .inline { bytes, output in
                    guard bytes.first != 0 else { return output.append(contentsOf: bytes) }
                    let copy = [UInt8](bytes)
                    throw RPCHandOff { context, responder in
                        #expect(context.method == Self.name)
                        parked.responders.withLock { $0.append((responder, copy)) }
                    }
                })
        }
    }

    static func waitUntil(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Test("a handed-off call is answered by its responder; an inline one at once (TCP and in process)")
    func handOff() async throws {
        for listen in [true, false] {
            let parked = Parked()
            let server = try Self.server(parked, listen: listen)
            let transport: any ClientTransport =
                listen ? try server.client() : InProcessTransport(server: server.server)
            let method = UnaryMethod<RawMessage, RawMessage>(Self.name)
            #expect(try await transport.call(method, RawMessage(bytes: [0, 7])).bytes == [0, 7])
            async let later = transport.call(method, RawMessage(bytes: [1, 2, 3]))
            await Self.waitUntil { parked.count() == 1 }
            parked.answerAll()
            #expect(try await later.bytes == [3, 2, 1])
            await server.server.shutdown()
        }
    }

    @Test("a handed-off call nobody answers ends at its deadline")
    func deadline() async throws {
        let parked = Parked()
        let server = try Self.server(parked, listen: true)
        let client = try server.client()
        let method = UnaryMethod<RawMessage, RawMessage>(Self.name)
        await #expect {
            _ = try await client.call(method, RawMessage(bytes: [1]), timeout: .milliseconds(50))
        } throws: { error in
            (error as? RPCError)?.code == .deadlineExceeded
        }
        // Answered after the deadline: nobody waits for it, and the server drains at once.
        parked.answerAll()
        await server.server.shutdown()
    }
}
