import Foundation
import Glibc
import HTTP
import Observability
import Testing

/// Clients that hold a connection without finishing a request, bodies without end, paths that
/// hide a NUL, and per-address rates: each is cut or refused, and the server goes on serving.
@Suite("HTTP server limits against hostile clients")
struct HTTPLimitsTests {
    private func withLimitedServer(_ limits: HTTPLimits, _ body: (HTTPServer) throws -> Void) throws {
        let server = HTTPServer(
            host: "127.0.0.1", port: 0, limits: limits, logger: Logger(service: "test", sink: .capturing()))
        server.route("GET", "/ok") { _ in .text("ok") }
        server.route("POST", "/upload") { request in .text("\(request.body.count)") }
        try server.start()
        defer { server.stop() }
        try body(server)
    }

    /// Reads until the server closes (0) or the receive timeout passes (-1); the time it took.
    private func waitForClose(_ fd: Int32) -> (closed: Bool, after: Duration) {
        let start = ContinuousClock.now
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 || (n < 0 && errno == ECONNRESET) { return (true, ContinuousClock.now - start) }
            if n < 0 { return (false, ContinuousClock.now - start) }
        }
    }

    @Test("headers that trickle in a byte at a time are cut at the header deadline, not kept alive by each byte")
    func slowHeadersAreCut() throws {
        try withLimitedServer(HTTPLimits(headerTimeout: .milliseconds(400), requestTimeout: .seconds(5))) { server in
            let fd = try RawHTTPClient.connect(port: server.port)
            defer { close(fd) }
            let start = ContinuousClock.now
            let head = Array("GET /ok HTTP/1.1\r\nX-Slow: ".utf8)
            var cut = false
            // One byte every 50 ms: well inside the idle timeout, never a whole header block.
            for index in 0..<200 {
                let byte = head[min(index, head.count - 1)]
                if [byte].withUnsafeBytes({ send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }) <= 0 {
                    cut = true
                    break
                }
                var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if Glibc.poll(&poll, 1, 50) > 0 {
                    cut = waitForClose(fd).closed
                    break
                }
            }
            let after = ContinuousClock.now - start
            #expect(cut)
            #expect(after >= .milliseconds(400) && after < .seconds(3), "cut after \(after)")
            #expect(try RawHTTPClient.request("GET", "/ok", port: server.port).status == 200)
            var text = MetricsText()
            server.writeMetrics(into: &text)
            #expect(text.output.contains("http_requests_refused_total{reason=\"header_timeout\"} 1\n"))
        }
    }

    @Test("a body that arrives too slowly is cut at the request deadline")
    func slowBodyIsCut() throws {
        try withLimitedServer(HTTPLimits(headerTimeout: .seconds(1), requestTimeout: .milliseconds(600))) {
            server in
            let fd = try RawHTTPClient.connect(port: server.port)
            defer { close(fd) }
            let head = "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n"
            _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            _ = [UInt8](repeating: 1, count: 10).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            let (closed, after) = waitForClose(fd)
            #expect(closed)
            #expect(after >= .milliseconds(400) && after < .seconds(4), "cut after \(after)")
        }
    }

    @Test("a chunked body that never ends is cut soon after the body cap, without the handler")
    func endlessChunkedBodyIsCut() throws {
        try withLimitedServer(HTTPLimits(maxBodyBytes: 4096)) { server in
            let fd = try RawHTTPClient.connect(port: server.port)
            defer { close(fd) }
            let head = "POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            let chunk = Array("1000\r\n".utf8) + [UInt8](repeating: 7, count: 4096) + Array("\r\n".utf8)
            var sent = 0
            while sent < 64 << 20 {
                let n = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                sent += n
            }
            // The connection was closed long before 64 MiB: the cap plus its 64 KiB slack,
            // and what the socket buffers hold.
            #expect(sent < 16 << 20, "sent \(sent) bytes before the close")
        }
    }

    @Test("a path with %00 is a path of its own: no route, 404")
    func encodedNulIsNotARouteEnd() throws {
        try withLimitedServer(HTTPLimits()) { server in
            let nul = try RawHTTPClient.request("GET", "/ok%00", port: server.port)
            let below = try RawHTTPClient.request("GET", "/ok%00/x", port: server.port)
            let encoded = try RawHTTPClient.request("GET", "/o%6B", port: server.port)
            #expect(nul.status == 404)
            #expect(below.status == 404)
            #expect(encoded.status == 200)
        }
    }

    @Test("connections from one address beyond its limit are refused while the first ones are served")
    func perAddressConnections() throws {
        var limits = HTTPLimits()
        limits.maxConnectionsPerAddress = 2
        try withLimitedServer(limits) { server in
            let first = try RawHTTPClient.connect(port: server.port)
            let second = try RawHTTPClient.connect(port: server.port)
            defer {
                close(first)
                close(second)
            }
            // Both are accepted: each is answered a whole request and stays open (keep-alive), so
            // the server holds two connections from this address before the third arrives.
            for fd in [first, second] {
                _ = Array("GET /ok HTTP/1.1\r\nHost: t\r\n\r\n".utf8).withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, 0)
                }
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 1024)
                while !received.containsHeaderEnd {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    received += buffer[0..<count]
                }
                #expect(received.containsHeaderEnd, "a first connection was not answered")
            }
            var third: RawHTTPResponse?
            var refused = false
            do {
                third = try RawHTTPClient.request("GET", "/ok", port: server.port)
            } catch {
                refused = true
            }
            #expect(refused || third == nil, "a third connection was served")
        }
    }

    @Test("a client past its rate is refused; its bucket refills with time and other addresses are not touched")
    func rateLimiter() {
        let limiter = AddressRateLimiter(rate: 10, burst: 3, maxAddresses: 2)
        let start: UInt64 = 1_000_000_000
        #expect((0..<3).allSatisfy { _ in limiter.allow("1.1.1.1", now: start) })
        #expect(!limiter.allow("1.1.1.1", now: start))
        #expect(!limiter.hasToken("1.1.1.1", now: start) && limiter.hasToken("9.9.9.9", now: start))
        #expect((0..<3).allSatisfy { _ in limiter.allow("2.2.2.2", now: start) })
        // 100 ms later, one token again (10 a second).
        #expect(limiter.allow("1.1.1.1", now: start + 100_000_000))
        #expect(!limiter.allow("1.1.1.1", now: start + 100_000_000))
        // The table is full (2 addresses, neither refilled): a third shares the overflow bucket.
        #expect((0..<3).allSatisfy { _ in limiter.allow("3.3.3.3", now: start + 100_000_000) })
        #expect(!limiter.allow("4.4.4.4", now: start + 100_000_000))
        #expect(limiter.refusedCount == 3)
        // Once refilled, an address is forgotten to make room.
        #expect(limiter.allow("4.4.4.4", now: start + 10_000_000_000))
    }
}

extension [UInt8] {
    /// Whether the bytes hold the blank line that ends an HTTP header.
    fileprivate var containsHeaderEnd: Bool {
        count >= 4 && (0...(count - 4)).contains { self[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }
    }
}
