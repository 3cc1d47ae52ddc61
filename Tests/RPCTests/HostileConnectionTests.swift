import Foundation
import Glibc
import RPC
import ServiceProcessKit
import Testing
import Wire

/// Connections that cost the server without asking anything of it, and frames that would make
/// it build more than they say: each is refused at its limit, and other callers go on.
@Suite("RPC server against hostile connections")
struct HostileConnectionTests {
    @Test("a connection that sends no frame is closed at the first-frame deadline; one that did stays")
    func firstFrameDeadline() async throws {
        let test = try TestServer { $0.firstFrameTimeout = .milliseconds(300) }
        let talker = try RawConnection(port: test.server.port)
        talker.send(RawConnection.request(1, TestMethods.echo, payload: [1]))
        #expect(try await talker.readReply()?.payload == [1])
        // Read before connecting: the server may accept (and start its deadline) before the
        // connect call returns here.
        let opened = ContinuousClock.now
        let silent = try RawConnection(port: test.server.port)
        #expect(await silent.isClosedByPeer())
        let waited = ContinuousClock.now - opened
        #expect(waited >= .milliseconds(300) && waited < .seconds(4), "closed after \(waited)")
        talker.send(RawConnection.request(2, TestMethods.echo, payload: [2]))
        #expect(try await talker.readReply()?.payload == [2])
        await test.server.shutdown()
    }

    @Test("connections from one address beyond its limit are closed at once; the first still works")
    func perAddressLimit() async throws {
        let test = try TestServer { $0.maxConnectionsPerAddress = 2 }
        let first = try RawConnection(port: test.server.port)
        let second = try RawConnection(port: test.server.port)
        first.send(RawConnection.request(1, TestMethods.echo, payload: [1]))
        #expect(try await first.readReply()?.payload == [1])
        let third = try RawConnection(port: test.server.port)
        #expect(await third.isClosedByPeer())
        second.send(RawConnection.request(1, TestMethods.echo, payload: [2]))
        #expect(try await second.readReply()?.payload == [2])
        await test.server.shutdown()
    }

    @Test("at the cap, a connection that never sent a frame goes before an idle one that did")
    func silentConnectionsGoFirst() async throws {
        let test = try TestServer { $0.maxConnections = 2 }
        let talker = try RawConnection(port: test.server.port)
        talker.send(RawConnection.request(1, TestMethods.echo, payload: [1]))
        #expect(try await talker.readReply()?.payload == [1])
        let silent = try RawConnection(port: test.server.port)
        // The talker's last frame is older than the silent one's opening; it stays all the same.
        let newcomer = try RawConnection(port: test.server.port)
        #expect(await silent.isClosedByPeer())
        talker.send(RawConnection.request(2, TestMethods.echo, payload: [2]))
        #expect(try await talker.readReply()?.payload == [2])
        newcomer.send(RawConnection.request(1, TestMethods.echo, payload: [3]))
        #expect(try await newcomer.readReply()?.payload == [3])
        await test.server.shutdown()
    }

    @Test("a request longer than its method's limit is RESOURCE_EXHAUSTED, and the connection goes on")
    func methodLimitOnCompleteFrame() async throws {
        let test = try TestServer(extra: { router in
            router.register(
                "test.v1.Test/Small", .inline { bytes, output in output.append(contentsOf: bytes) },
                limits: RPCMethodLimits(maxRequestBytes: 100))
        })
        let connection = try RawConnection(port: test.server.port)
        let frame = RawConnection.request(7, "test.v1.Test/Small", payload: [UInt8](repeating: 1, count: 200))
        connection.send(frame)
        let reply = try #require(try await connection.readReply())
        #expect(reply.callID == 7 && reply.code == .resourceExhausted)
        #expect(
            reply.message
                == "a request of \(frame.count - 4) bytes for test.v1.Test/Small exceeds its limit of 100 bytes")
        connection.send(RawConnection.request(8, "test.v1.Test/Small", payload: [2]))
        #expect(try await connection.readReply()?.payload == [2])
        await test.server.shutdown()
    }

    @Test("a large frame for a method of small requests is refused by its first bytes, before the rest is sent")
    func methodLimitOnFirstBytes() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        // A frame that declares 512 KiB for Echo (whose limit is the standard 64 KiB); only its
        // first 300 bytes are ever sent.
        let frame = RawConnection.request(1, TestMethods.echo, payload: [UInt8](repeating: 1, count: 512 * 1024))
        connection.send(Array(frame.prefix(300)))
        let reply = try #require(try await connection.readReply())
        #expect(reply.callID == 0 && reply.code == .resourceExhausted)
        #expect(
            reply.message
                == "a request of \(frame.count - 4) bytes for test.v1.Test/Echo exceeds its limit of 65536 bytes")
        #expect(await connection.isClosedByPeer())
        await test.server.shutdown()
    }

    @Test("a large frame that does not name its method first is refused by its first bytes")
    func largeFrameWithoutLeadingMethod() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        // Envelope field 5 (payload) first: 100 KiB, then no method in the first 256 bytes.
        var envelope: [UInt8] = [0x2a]
        var length = 100 * 1024
        while length >= 0x80 {
            envelope.append(UInt8(length & 0x7f) | 0x80)
            length >>= 7
        }
        envelope.append(UInt8(length))
        envelope += [UInt8](repeating: 0, count: 100 * 1024)
        let count = envelope.count
        connection.send(
            [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
                + envelope.prefix(1000))
        let reply = try #require(try await connection.readReply())
        #expect(reply.callID == 0 && reply.code == .resourceExhausted)
        #expect(reply.message == "a frame of \(count) bytes must name its method within its first 256 bytes")
        await test.server.shutdown()
    }

    @Test("an envelope with more unknown fields than allowed closes the connection with the reason")
    func envelopeUnknownFields() async throws {
        let test = try TestServer()
        let connection = try RawConnection(port: test.server.port)
        var envelope = Array(RawConnection.request(1, TestMethods.echo, payload: [1]).dropFirst(4))
        for _ in 0..<17 { envelope += [0x80, 0x01, 0x00] }  // field 16, varint 0
        let count = envelope.count
        connection.send([0, 0, UInt8(count >> 8), UInt8(count & 0xff)] + envelope)
        let reply = try #require(try await connection.readReply())
        #expect(reply.callID == 0 && reply.code == .invalidArgument)
        #expect(
            reply.message
                == "frame is not a valid subscriptions.rpc.v1.Envelope: more than 16 fields this version does not know")
        await test.server.shutdown()
    }

    @Test("a method's decode budget refuses a payload before protobuf-c builds it")
    func decodeBudgetBeforeUnpack() async throws {
        let test = try TestServer(extra: { router in
            router.inline(
                "test.v1.Test/Batch",
                limits: RPCMethodLimits(maxRequestBytes: nil, budget: DecodeBudget(maxRepeated: 3))
            ) { (request: ListInboxResponse) in request }
        })
        let connection = try RawConnection(port: test.server.port)
        // ListInboxResponse.entries (field 1): four empty entries.
        connection.send(
            RawConnection.request(1, "test.v1.Test/Batch", payload: [0x0a, 0x00, 0x0a, 0x00, 0x0a, 0x00, 0x0a, 0x00]))
        let reply = try #require(try await connection.readReply())
        #expect(reply.code == .resourceExhausted)
        #expect(reply.message == "subscriptions.ledger.v1.ListInboxResponse.entries: more than 3 elements")
        connection.send(RawConnection.request(2, "test.v1.Test/Batch", payload: [0x0a, 0x00, 0x0a, 0x00, 0x0a, 0x00]))
        #expect(try await connection.readReply()?.code == .ok)
        await test.server.shutdown()
    }

    @Test("a reader that grants unlimited credit but never reads cannot make the server buffer without bound")
    func unreadStreamIsBounded() async throws {
        let test = try TestServer()
        // A small receive buffer keeps what the kernel holds for this reader to a few hundred KiB.
        let connection = try RawConnection(port: test.server.port, receiveBuffer: 256 * 1024)
        var frames: [UInt8] = []
        TestMethods.firehose.withCString { method in
            Envelope.appendFrame(to: &frames, callID: 1, kind: .request, method: method, window: 4096)
        }
        Envelope.appendFrame(to: &frames, callID: 1, kind: .windowUpdate, window: .max)
        connection.send(frames)
        // Nothing reads the socket. The kernel's socket buffers fill (they grow for a while),
        // then the 4 MiB output watermark and the 1 MiB in-transit limit stop the handler. How
        // long the kernel's buffers take to fill is the machine's: this waits, bounded, until
        // the count stops moving.
        var previous = -1
        var current = test.streamSent.all.count
        let stopped = try await poll(within: .seconds(10), every: .milliseconds(250)) {
            (previous, current) = (current, test.streamSent.all.count)
            return current == previous
        }
        #expect(stopped, "the handler kept sending: \(current) messages")
        // 64 KiB each: the kernel's buffers (at most 4 MiB sending, 0.5 MiB receiving) plus
        // 5 MiB here, far below the 4096 messages (256 MiB) the credit alone would allow.
        #expect(current < 170, "\(current) messages")
        await test.server.shutdown()
    }
}
