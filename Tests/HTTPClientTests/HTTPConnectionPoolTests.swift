import Foundation
import Glibc
import HTTP
import Observability
import Synchronization
import TestSupport
import Testing

@testable import HTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The kept-alive `http://` client: against the real HTTP server, and against a raw socket
/// server that counts its connections and can drop each after one answer without saying so.
@Suite("HTTP connection pool")
struct HTTPConnectionPoolTests {
    /// Answers `200 ok` to each request on each accepted connection; counts the connections.
    final class RawServer: Sendable {
        final class Counter: Sendable {
            let value = Atomic<Int>(0)
        }
        let listener: Int32
        let port: Int
        let accepted = Counter()

        /// With `dropAfterOne`, each connection is closed after its first answer (which says
        /// nothing of closing), as a server drops an idle kept-alive connection.
        init(dropAfterOne: Bool) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
            }
            listen(listener, 16)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
            }
            port = Int(UInt16(bigEndian: address.sin_port))
            self.listener = listener
            let accepted = accepted
            Thread.detachNewThread {
                while true {
                    let fd = accept(listener, nil, nil)
                    guard fd >= 0 else { return }
                    accepted.value.add(1, ordering: .relaxed)
                    Thread.detachNewThread { Self.serve(fd, dropAfterOne: dropAfterOne) }
                }
            }
        }

        deinit {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }

        private static func serve(_ fd: Int32, dropAfterOne: Bool) {
            defer { close(fd) }
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                guard let end = HTTPResponseHead.end(in: buffer[...]) else {
                    let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                    guard count > 0 else { return }
                    buffer.append(contentsOf: chunk[..<count])
                    continue
                }
                let head = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                while buffer.count < end + length {
                    let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                    guard count > 0 else { return }
                    buffer.append(contentsOf: chunk[..<count])
                }
                buffer.removeFirst(end + length)
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
                _ = answer.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                if dropAfterOne { return }
            }
        }

        var url: URL { URL(string: "http://127.0.0.1:\(port)/hooks")! }
    }

    func post(_ url: URL, _ body: String) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("evt_1", forHTTPHeaderField: "webhook-id")
        return request
    }

    @Test("a POST arrives with its headers and body; the answer comes back with status, lowercased headers, body")
    func answer() async throws {
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "pool-test", sink: .capturing()))
        let seen = Mutex<[(String, [UInt8])]>([])
        server.route("POST", "/hooks") { request in
            seen.withLock { $0.append((request.headers["webhook-id"] ?? "", request.body)) }
            return HTTPResponse(status: 202, headers: [("X-Thing", "1")], body: Array("hello".utf8))
        }
        try server.start()
        defer { server.stop() }
        let pool = HTTPConnectionPool(requestTimeout: 10, maxResponseBytes: 64, maxIdle: 4)

        let url = URL(string: "http://127.0.0.1:\(server.port)/hooks")!
        let response = try await pool.perform(post(url, #"{"a":1}"#)).get()

        #expect(response.status == 202)
        #expect(response.headers["x-thing"] == "1")
        #expect(response.body == Data("hello".utf8))
        #expect(seen.withLock { $0.map(\.0) } == ["evt_1"])
        #expect(seen.withLock { $0.map(\.1) } == [Array(#"{"a":1}"#.utf8)])
    }

    @Test("a body longer than the limit is .tooLarge")
    func tooLarge() async throws {
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "pool-test", sink: .capturing()))
        server.route("POST", "/big") { _ in HTTPResponse(status: 200, body: Array(repeating: 120, count: 65)) }
        try server.start()
        defer { server.stop() }
        let pool = HTTPConnectionPool(requestTimeout: 10, maxResponseBytes: 64, maxIdle: 4)

        let outcome = await pool.perform(post(URL(string: "http://127.0.0.1:\(server.port)/big")!, "x"))

        #expect(throws: HTTPClientTransport.Failure.tooLarge(limit: 64)) { try outcome.get() }
    }

    @Test("a refused connection is .network(\"connection refused\")")
    func connectionRefused() async throws {
        let held = try HeldPort()
        let pool = HTTPConnectionPool(requestTimeout: 10, maxResponseBytes: 64, maxIdle: 4)

        let outcome = await pool.perform(post(held.url.appendingPathComponent("gone"), "x"))
        withExtendedLifetime(held) {}

        #expect(throws: HTTPClientTransport.Failure.network("connection refused")) { try outcome.get() }
    }

    @Test("requests one after another share one connection")
    func keptAlive() async throws {
        let server = try RawServer(dropAfterOne: false)
        let pool = HTTPConnectionPool(requestTimeout: 10, maxResponseBytes: 64, maxIdle: 4)

        for index in 0..<5 {
            let response = try await pool.perform(post(server.url, "event \(index)")).get()
            #expect(response.body == Data("ok".utf8))
        }

        #expect(server.accepted.value.load(ordering: .relaxed) == 1)
    }

    @Test("requests handed over together are each answered once, to their own reply")
    func submittedTogether() async throws {
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "pool-test", sink: .capturing()))
        server.route("POST", "/hooks") { request in HTTPResponse(status: 200, body: request.body) }
        try server.start()
        defer { server.stop() }
        let pool = HTTPConnectionPool(requestTimeout: 10, maxResponseBytes: 64, maxIdle: 4)
        let url = URL(string: "http://127.0.0.1:\(server.port)/hooks")!

        for round in 0..<3 {
            let answers = await withCheckedContinuation { continuation in
                let kept = Mutex<[Int: String]>([:])
                pool.submit(
                    (0..<4).map { index in
                        (
                            HTTPConnectionPool.Request(
                                "POST", url, headers: [], body: Array("\(round).\(index)".utf8))!,
                            { outcome in
                                let body =
                                    (try? outcome.get()).map { String(decoding: $0.body, as: UTF8.self) } ?? "failed"
                                let all = kept.withLock { kept in
                                    kept[index] = body
                                    return kept.count == 4 ? kept : nil
                                }
                                if let all { continuation.resume(returning: all) }
                            }
                        )
                    })
            }
            #expect(answers == [0: "\(round).0", 1: "\(round).1", 2: "\(round).2", 3: "\(round).3"])
        }
    }

    @Test("a kept-alive connection the server dropped is replaced and the request goes once more")
    func droppedConnectionIsReplaced() async throws {
        let server = try RawServer(dropAfterOne: true)
        let pool = HTTPConnectionPool(requestTimeout: 10, maxResponseBytes: 64, maxIdle: 4)

        for index in 0..<3 {
            let response = try await pool.perform(post(server.url, "event \(index)")).get()
            #expect(response.status == 200)
        }

        #expect(server.accepted.value.load(ordering: .relaxed) == 3)
    }

    @Test(
        "whether an answer keeps its connection",
        arguments: [
            ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            ("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false),
            ("HTTP/1.0 200 OK\r\n\r\n", false),
            ("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n", true),
        ])
    func keepAlive(head: String, keeps: Bool) throws {
        let parsed = try #require(HTTPResponseHead(ArraySlice(head.utf8)))
        #expect(parsed.keepAlive == keeps)
    }

    @Test("a head's end, length and chunking are read")
    func head() throws {
        let bytes = Array("HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\nTransfer-Encoding: chunked\r\n\r\nrest".utf8)
        let end = try #require(HTTPResponseHead.end(in: bytes[...]))
        let parsed = try #require(HTTPResponseHead(bytes[..<end]))
        #expect(end == bytes.count - 4)
        #expect(parsed.status == 404)
        #expect(parsed.contentLength == 12)
        #expect(parsed.chunked)
        #expect(HTTPResponseHead(ArraySlice("SMTP ready\r\n\r\n".utf8)) == nil)
    }

    @Test("an answer is read by its length, in chunks, or to the end of the stream, once all of it is there")
    func parse() {
        let lengthed = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        #expect(HTTPAnswer.parse(Array(lengthed.dropLast()), ended: false, maxBody: 64) == .incomplete)
        #expect(
            HTTPAnswer.parse(lengthed, ended: false, maxBody: 64)
                == .complete(
                    status: 200, headers: ["content-length": "2"], body: Array("ok".utf8), consumed: lengthed.count,
                    keep: true))
        let chunked = Array(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n1;x=y\r\n!\r\n0\r\n\r\n"
                .utf8)
        #expect(HTTPAnswer.parse(Array(chunked.dropLast(2)), ended: false, maxBody: 64) == .incomplete)
        #expect(
            HTTPAnswer.parse(chunked, ended: false, maxBody: 64)
                == .complete(
                    status: 200, headers: ["transfer-encoding": "chunked"], body: Array("ok!".utf8),
                    consumed: chunked.count, keep: true))
        let unbounded = Array("HTTP/1.1 500 Oops\r\n\r\nbad".utf8)
        #expect(HTTPAnswer.parse(unbounded, ended: false, maxBody: 64) == .incomplete)
        #expect(
            HTTPAnswer.parse(unbounded, ended: true, maxBody: 64)
                == .complete(status: 500, headers: [:], body: Array("bad".utf8), consumed: unbounded.count, keep: false)
        )
        #expect(HTTPAnswer.parse([], ended: true, maxBody: 64) == .closedEmpty)
        #expect(HTTPAnswer.parse(Array(lengthed.dropLast()), ended: true, maxBody: 64) == HTTPAnswer.lost)
        #expect(HTTPAnswer.parse(lengthed, ended: false, maxBody: 1) == .failed(.tooLarge(limit: 1)))
        #expect(
            HTTPAnswer.parse(Array("SMTP\r\n\r\n".utf8), ended: false, maxBody: 64)
                == .failed(.network("malformed HTTP answer: it begins \"SMTP\" (8 bytes)")))
    }
}
