import Config
import Foundation
import Glibc
import RPC
import Sockets
import Synchronization
import TestSupport
import Testing
import Wire

/// Hostile clients against the real executables: each attack the hostile-load issue lists,
/// reproduced, refused within its deadline, while a well-behaved client on another connection
/// is served. Latency figures are printed exactly and asserted loosely (a busy 2-core machine).
@Suite("Hostile clients against the executables", .serialized, .timeLimit(.minutes(10)))
struct HostileLoadTests {
    /// A blocking TCP socket to 127.0.0.1 for writing attacks byte by byte.
    final class RawSocket: @unchecked Sendable {  // used by one thread at a time
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard rc == 0 else {
                close(fd)
                throw ServiceProcessError("connect to \(port): \(String(cString: strerror(errno)))")
            }
        }

        deinit { close(fd) }

        /// Sends all of `bytes` unless the peer closes; the bytes taken.
        @discardableResult
        func send(_ bytes: [UInt8]) -> Int {
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                sent += n
            }
            return sent
        }

        /// Whether the peer has closed the connection (end of file or reset), waiting at most
        /// `milliseconds` for it; whatever the peer wrote first is read and dropped.
        func isClosed(within milliseconds: Int32) -> Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let deadline = ContinuousClock.now + .milliseconds(Int(milliseconds))
            while ContinuousClock.now < deadline {
                var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let left = max(
                    1, Int32((deadline - ContinuousClock.now).components.attoseconds / 1_000_000_000_000_000))
                guard Glibc.poll(&poll, 1, min(left, milliseconds)) > 0 else { continue }
                let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if n == 0 || (n < 0 && errno == ECONNRESET) { return true }
            }
            return false
        }
    }

    /// `count` sequential Health calls on `client`: each one's milliseconds, sorted.
    static func healthLatencies(_ client: RPCClient, _ method: String, count: Int) async throws -> [Double] {
        var samples: [Double] = []
        for _ in 0..<count {
            let start = ContinuousClock.now
            _ = try await client.call(method, HealthRequest(), as: HealthResponse.self, timeout: .seconds(10))
            let elapsed = ContinuousClock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
        }
        return samples.sorted()
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    static func report(_ what: String, _ sorted: [Double]) -> String {
        let text = String(
            format: "%@: Health over %d calls p50 %.2f ms, p99 %.2f ms, max %.2f ms", what, sorted.count,
            percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last ?? 0)
        print("hostile load: " + text)
        return text
    }

    static let entitlementHealth = EntitlementRPC.health.name

    static func metric(_ port: Int, _ line: String) async throws -> Double? {
        let (_, text) = try await httpGet(port: port, path: "/metrics")
        return text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    @Test("1,000 RPC connections that never send a byte lock nobody out and are closed at the first-frame deadline")
    func rpcConnectionFlood() async throws {
        let stack = try await EntitlementStack()
        let (process, client, _) = try await stack.startEntitlement(environment: [
            "RPC_MAX_CONNECTIONS": "256", "RPC_MAX_CONNECTIONS_PER_ADDRESS": "100000", "RPC_FIRST_FRAME_TIMEOUT": "2s",
            "OPS_LISTEN": "127.0.0.1:0",
        ])
        let port = try await process.rpcPort()
        let ops = try await process.opsPort()
        let opened = ContinuousClock.now
        var flood: [RawSocket] = []
        for _ in 0..<1000 { flood.append(try RawSocket(port: port)) }
        // A caller that arrives after the flood is served: the silent connections make room.
        let latecomer = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: port)])
        let latencies = try await Self.healthLatencies(latecomer, Self.entitlementHealth, count: 200)
        let text = Self.report("during a flood of 1,000 silent connections", latencies)
        #expect(Self.percentile(latencies, 0.99) < 500, "\(text)")
        // Every silent connection is gone by the deadline (2 s) and a sweep or two after it.
        let closed = flood.filter { $0.isClosed(within: 6000) }.count
        let after = ContinuousClock.now - opened
        #expect(closed == 1000, "\(closed) of 1,000 closed after \(after)")
        #expect(after < .seconds(30))
        let evicted = try await Self.metric(ops, "rpc_server_connections_evicted_total")
        let timedOut = try await Self.metric(ops, "rpc_server_frames_rejected_total{reason=\"first_frame_timeout\"}")
        #expect((evicted ?? 0) + (timedOut ?? 0) >= 1000 - 256)
        print(
            "hostile load: flood closed after \(after): \(evicted ?? 0) evicted at the cap, \(timedOut ?? 0) at the deadline"
        )
        _ = try await Self.healthLatencies(client, Self.entitlementHealth, count: 1)
        latecomer.shutdown()
        client.shutdown()
        process.terminate()
        _ = await process.waitForExit()
        await stack.stop()
    }

    @Test("1 MiB frames of empty batch elements and unknown fields are refused before they are unpacked")
    func frameAmplification() async throws {
        let stack = try await EntitlementStack()
        let (process, client, _) = try await stack.startEntitlement(environment: ["OPS_LISTEN": "127.0.0.1:0"])
        let port = try await process.rpcPort()
        let before = process.residentBytes
        // CheckAccessBatchRequest.checks (field 1) as 524,000 empty elements: 1 MiB.
        let batch = (0..<524_000 * 2).map { $0 % 2 == 0 ? UInt8(0x0a) : UInt8(0) }
        let big = RawConnectionFrames.request(1, EntitlementRPC.checkAccessBatch.name, batch)
        // Just under 64 KiB (read whole): 30,000 empty checks, past the budget of 100.
        let mid = RawConnectionFrames.request(
            2, EntitlementRPC.checkAccessBatch.name, Array(batch.prefix(60_000)))
        let stop = Atomic<Bool>(false)
        let attacks = Atomic<Int>(0)
        let attackers = (0..<4).map { _ in
            Thread {
                while !stop.load(ordering: .relaxed) {
                    guard let socket = try? RawSocket(port: port) else { continue }
                    let round = attacks.add(1, ordering: .relaxed).newValue
                    if round % 2 == 0 {
                        // Refused by its first bytes, and the connection closed.
                        socket.send(big)
                        _ = socket.isClosed(within: 2000)
                    } else {
                        // Read whole, refused by the budget with a reply.
                        socket.send(mid)
                        _ = RawConnectionFrames.readReply(socket.fd)
                    }
                }
            }
        }
        for thread in attackers { thread.start() }
        // Health calls for as long as it takes 400 attacks to land (at most 20 s).
        var latencies: [Double] = []
        let began = ContinuousClock.now
        while attacks.load(ordering: .relaxed) < 400 && ContinuousClock.now - began < .seconds(20) {
            latencies += try await Self.healthLatencies(client, Self.entitlementHealth, count: 50)
        }
        latencies.sort()
        stop.store(true, ordering: .relaxed)
        let text = Self.report("while 4 clients send 1 MiB and 60 KiB amplification frames", latencies)
        #expect(Self.percentile(latencies, 0.99) < 500, "\(text)")
        #expect(attacks.load(ordering: .relaxed) >= 400)
        let peak = process.residentBytes
        print(
            "hostile load: \(attacks.load(ordering: .relaxed)) amplification frames; resident \(before >> 20) MiB before, \(peak >> 20) MiB after"
        )
        #expect(peak < before + (64 << 20), "resident \(before) before, \(peak) after")
        // The refusals say what was wrong.
        let socket = try RawSocket(port: port)
        socket.send(mid)
        let reply = try #require(RawConnectionFrames.readReply(socket.fd))
        #expect(reply.code == .resourceExhausted)
        #expect(reply.message == "subscriptions.entitlement.v1.CheckAccessBatchRequest.checks: more than 100 elements")
        let refused = try RawSocket(port: port)
        refused.send(Array(big.prefix(4096)))
        let early = try #require(RawConnectionFrames.readReply(refused.fd))
        #expect(early.callID == 0 && early.code == .resourceExhausted)
        #expect(
            early.message
                == "a request of \(big.count - 4) bytes for subscriptions.entitlement.v1.Entitlement/CheckAccessBatch exceeds its limit of 65536 bytes"
        )
        client.shutdown()
        process.terminate()
        _ = await process.waitForExit()
        await stack.stop()
    }

    @Test(
        "300 HTTP connections that trickle headers are cut at the header deadline; the operations listener answers meanwhile"
    )
    func slowHeaders() async throws {
        let stack = try await EntitlementStack()
        let (process, client, http) = try await stack.startEntitlement(environment: [
            "OPS_LISTEN": "127.0.0.1:0", "HTTP_MAX_CONNECTIONS": "200", "HTTP_MAX_CONNECTIONS_PER_ADDRESS": "0",
            "HTTP_HEADER_TIMEOUT": "2s",
        ])
        let ops = try await process.opsPort()
        var slow: [RawSocket] = []
        for _ in 0..<300 {
            guard let socket = try? RawSocket(port: http) else { continue }
            socket.send(Array("GET /healthz HTTP/1.1\r\n".utf8))
            slow.append(socket)
        }
        let trickling = slow
        let stop = Atomic<Bool>(false)
        let trickler = Thread {
            while !stop.load(ordering: .relaxed) {
                for socket in trickling { _ = Glibc.send(socket.fd, "X", 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                usleep(100_000)
            }
        }
        trickler.start()
        let start = ContinuousClock.now
        var opsTimes: [Double] = []
        for _ in 0..<20 {
            let began = ContinuousClock.now
            let (status, body) = try await httpGet(port: ops, path: "/healthz")
            #expect(status == 200 && body == "ok entitlement\n")
            let elapsed = ContinuousClock.now - began
            opsTimes.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
        }
        opsTimes.sort()
        print(
            String(
                format:
                    "hostile load: /healthz on the operations listener during 300 slow-header connections: p50 %.2f ms, max %.2f ms",
                Self.percentile(opsTimes, 0.5), opsTimes.last ?? 0))
        #expect((opsTimes.last ?? 0) < 1000)
        let closed = slow.filter { $0.isClosed(within: 6000) }.count
        let after = ContinuousClock.now - start
        stop.store(true, ordering: .relaxed)
        #expect(closed == slow.count, "\(closed) of \(slow.count) cut after \(after)")
        let (status, _) = try await httpGet(port: http, path: "/healthz")
        #expect(status == 200)
        let cut = try await Self.metric(ops, "http_requests_refused_total{reason=\"header_timeout\"}")
        #expect((cut ?? 0) >= 200, "cut: \(cut ?? 0)")
        print("hostile load: slow-header connections cut after \(after) (\(cut ?? 0) by the header deadline)")
        client.shutdown()
        process.terminate()
        _ = await process.waitForExit()
        await stack.stop()
    }

    @Test(
        "junk to the notification paths is rate-limited per address, sampled, never a ledger row; endless and %00 requests are refused"
    )
    func notificationJunk() async throws {
        let stack = try await StoreSimStack(verifier: [
            "OPS_LISTEN": "127.0.0.1:0", "NOTIFY_RATE_PER_ADDRESS": "1", "NOTIFY_BURST_PER_ADDRESS": "20",
            "HTTP_MAX_BODY_BYTES": "65536",
        ])
        let http = try await stack.verifier.httpPort()
        let ops = try await stack.verifier.opsPort()
        var statuses: [Int: Int] = [:]
        for index in 0..<60 {
            let (status, _) = try await httpPost(
                port: http, path: "/apple/notifications/sandbox", body: "junk \(index)")
            statuses[status, default: 0] += 1
        }
        // The burst of 20 (and at most a token or two of refill) is answered 400, the rest 429.
        #expect((statuses[400] ?? 0) >= 20 && (statuses[400] ?? 0) <= 24, "\(statuses)")
        #expect((statuses[400] ?? 0) + (statuses[429] ?? 0) == 60, "\(statuses)")
        let rejected: ListInboxResponse = try await stack.entitlementStack.ledgerClient.call(
            "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .rejected))
        #expect(rejected.entries.isEmpty)
        let (samplesStatus, samplesBody) = try await httpGet(port: ops, path: "/rejected")
        #expect(samplesStatus == 200)
        let samples = try JSONSerialization.jsonObject(with: Data(samplesBody.utf8)) as? [String: [[String: Any]]]
        #expect(samples?["apple/malformed"]?.count == 8)
        #expect(samples?["apple/malformed"]?.last?["client"] as? String == "127.0.0.1")
        let refused = try await Self.metric(
            ops, "verifier_notifications_refused_total{reason=\"malformed\",store=\"apple\"}")
        #expect(refused == Double(statuses[400] ?? 0))
        // A NUL hidden in the path is no route.
        let (nulStatus, _) = try await httpPost(port: http, path: "/apple/notifications/sandbox%00", body: "{}")
        #expect(nulStatus == 404)
        // A chunked body without end is cut a little past the 64 KiB cap.
        let socket = try RawSocket(port: http)
        socket.send(Array("POST /google/rtdn HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        let chunk = Array("4000\r\n".utf8) + [UInt8](repeating: 0x20, count: 0x4000) + Array("\r\n".utf8)
        var sent = 0
        while sent < 256 << 20 {
            let n = socket.send(chunk)
            sent += n
            if n < chunk.count { break }
        }
        #expect(sent < 16 << 20, "\(sent) bytes taken before the cut")
        print("hostile load: junk answers \(statuses); an endless chunked body was cut after \(sent) bytes")
        await stack.stop()
    }
}

/// Request frames and replies read on a blocking socket.
enum RawConnectionFrames {
    static func request(_ callID: UInt64, _ method: String, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        method.withCString { name in
            payload.withUnsafeBytes { bytes in
                Envelope.appendFrame(to: &out, callID: callID, kind: .request, method: name, payload: bytes)
            }
        }
        return out
    }

    struct Reply {
        let callID: UInt64
        let code: StatusCode
        let message: String
    }

    /// The next reply frame, waiting at most 5 s.
    static func readReply(_ fd: Int32) -> Reply? {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func read(_ count: Int) -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: count)
            var offset = 0
            while offset < count {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, count - offset, 0) }
                if n <= 0 { return nil }
                offset += n
            }
            return buffer
        }
        guard let header = read(4) else { return nil }
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard let body = read(length) else { return nil }
        return body.withUnsafeBytes { raw in
            try? Envelope.withDecoded(raw) { view in
                Reply(callID: view.callID, code: view.statusCode, message: view.statusText)
            }
        }
    }
}
