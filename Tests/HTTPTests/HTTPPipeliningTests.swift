import Glibc
import HTTP
import Observability
import Testing

/// Keep-alive and pipelining: requests sent back to back on one connection, before any answer,
/// are each answered, in the order they were sent.
@Suite("HTTP server pipelining")
struct HTTPPipeliningTests {
    private func withServer(_ body: (HTTPServer) throws -> Void) throws {
        let server = HTTPServer(
            host: "127.0.0.1", port: 0, limits: HTTPLimits(), logger: Logger(service: "test", sink: .capturing()))
        server.route("GET", "/name/*") { request in .text(request.path) }
        server.route("POST", "/echo") { request in HTTPResponse(status: 201, body: request.body) }
        try server.start()
        defer { server.stop() }
        try body(server)
    }

    /// Splits `bytes` into responses by their `Content-Length`: (status, body) in order.
    private func responses(_ bytes: [UInt8]) -> [(Int, String)] {
        var answers: [(Int, String)] = []
        var rest = bytes[...]
        let separator = Array("\r\n\r\n".utf8)
        while let end = rest.indices.first(where: { rest[$0...].starts(with: separator) }) {
            let head = String(decoding: rest[..<end], as: UTF8.self).split(separator: "\r\n")
            let status = head.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
            let length =
                head.dropFirst().first { $0.lowercased().hasPrefix("content-length:") }.flatMap {
                    Int($0.split(separator: ":")[1].trimmingPrefix(" "))
                } ?? 0
            let bodyStart = end + separator.count
            guard rest.endIndex - bodyStart >= length else { break }
            answers.append((status, String(decoding: rest[bodyStart..<bodyStart + length], as: UTF8.self)))
            rest = rest[(bodyStart + length)...]
        }
        return answers
    }

    /// Writes `bytes` on a fresh connection in one send, then reads until the server closes.
    private func exchange(_ bytes: [UInt8], port: Int) throws -> [UInt8] {
        let fd = try RawHTTPClient.connect(port: port)
        defer { close(fd) }
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #expect(sent == bytes.count)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            received += buffer[..<n]
        }
        return received
    }

    @Test("requests pipelined in one write are all answered, in the order they were sent")
    func pipelinedRequestsAreAnsweredInOrder() throws {
        try withServer { server in
            var wire = ""
            for index in 0..<20 {
                if index % 3 == 1 {
                    let body = "body \(index)"
                    wire += "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                } else {
                    wire += "GET /name/\(index) HTTP/1.1\r\nHost: t\r\n\r\n"
                }
            }
            wire += "GET /name/last HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            let answers = responses(try exchange(Array(wire.utf8), port: server.port))
            var expected: [(Int, String)] = (0..<20).map { $0 % 3 == 1 ? (201, "body \($0)") : (200, "/name/\($0)") }
            expected.append((200, "/name/last"))
            #expect(answers.map(\.0) == expected.map(\.0))
            #expect(answers.map(\.1) == expected.map(\.1))
        }
    }

    @Test("a keep-alive connection serves one request after another, each answered before the next is sent")
    func keepAliveServesRequestsInTurn() throws {
        try withServer { server in
            let fd = try RawHTTPClient.connect(port: server.port)
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            for index in 0..<5 {
                let request = Array("GET /name/\(index) HTTP/1.1\r\nHost: t\r\n\r\n".utf8)
                #expect(request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } > 0)
                var received: [UInt8] = []
                while responses(received).isEmpty {
                    let n = recv(fd, &buffer, buffer.count, 0)
                    try #require(n > 0)
                    received += buffer[..<n]
                }
                #expect(responses(received).map(\.1) == ["/name/\(index)"])
            }
        }
    }
}
