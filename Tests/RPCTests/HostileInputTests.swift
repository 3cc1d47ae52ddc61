import Foundation
import RPC
import TestSupport
import Testing
import Wire

@Suite("Hostile input")
struct HostileInputTests {
    @Test("random bytes, and valid frames with random envelopes, on many connections never stop the server")
    func randomInput() async throws {
        let test = try TestServer { $0.maxFrameLength = 4096 }
        var random = SeededGenerator(seed: 2026)
        for round in 0..<200 {
            let connection = try RawConnection(port: test.server.port, timeout: 5)
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 1...300, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            } else {
                // A well-formed length around random envelope bytes reaches the protobuf decoder.
                let body = (0..<Int.random(in: 1...200, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
                let n = UInt32(body.count)
                bytes = [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + body
            }
            connection.send(bytes)
            // Whatever came back, the connection ends or stays usable; the server answers others.
            if round % 20 == 0 {
                let client = try test.client()
                #expect(try await client.unary(TestMethods.echo, request: [UInt8(round % 256)]) == [UInt8(round % 256)])
            }
        }
        let client = try test.client()
        #expect(try await client.unary(TestMethods.echo, request: [42]) == [42])
        await test.server.shutdown()
    }
}
