import Glibc

/// What the test client got back: the status, the headers with lowercased names, and the body.
struct RawHTTPResponse {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A socket call that failed in the test client, with its errno.
struct RawHTTPClientError: Error, CustomStringConvertible {
    let operation: String
    let code: Int32

    var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
}

/// A minimal blocking HTTP/1.1 client, one connection per request, so tests control the exact
/// bytes sent. Reads are bounded by a receive timeout so a broken server fails a test instead of hanging it.
enum RawHTTPClient {
    /// Sends `method target` with `headers` and `body` (and `Content-Length` when there is a body
    /// and no `Transfer-Encoding`), then reads the response until the server closes.
    static func request(
        _ method: String, _ target: String, port: Int, host: String = "127.0.0.1", headers: [(String, String)] = [],
        body: [UInt8] = []
    ) throws -> RawHTTPResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty && !headers.contains(where: { $0.0.lowercased() == "transfer-encoding" }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        return try exchange(Array(head.utf8) + body, port: port, host: host)
    }

    /// `body` in HTTP/1.1 chunked encoding, in chunks of `chunkSize` bytes.
    static func chunked(_ body: [UInt8], chunkSize: Int) -> [UInt8] {
        var out: [UInt8] = []
        for start in stride(from: 0, to: body.count, by: chunkSize) {
            let chunk = body[start..<min(start + chunkSize, body.count)]
            out += Array("\(String(chunk.count, radix: 16))\r\n".utf8) + chunk + Array("\r\n".utf8)
        }
        return out + Array("0\r\n\r\n".utf8)
    }

    /// Opens a TCP connection to `host` (an IPv4 or IPv6 literal) and `port`.
    static func connect(port: Int, host: String = "127.0.0.1") throws -> Int32 {
        let isIPv6 = host.contains(":")
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPClientError(operation: "socket", code: errno) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let status: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard status == 0 else {
            let code = errno
            close(fd)
            throw RawHTTPClientError(operation: "connect", code: code)
        }
        return fd
    }

    /// Writes `bytes` and reads the response until the server closes. A server that answers
    /// early and stops reading (413) ends the write; the response is read all the same.
    static func exchange(_ bytes: [UInt8], port: Int, host: String = "127.0.0.1") throws -> RawHTTPResponse {
        let fd = try connect(port: port, host: host)
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { break }
            guard n > 0 else {
                // A reset after the response arrived still leaves the response to parse.
                if errno == ECONNRESET && !received.isEmpty { break }
                throw RawHTTPClientError(operation: "recv", code: errno)
            }
            received += buffer[..<n]
        }
        return try parse(received)
    }

    private static func parse(_ bytes: [UInt8]) throws -> RawHTTPResponse {
        let separator = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else {
            throw RawHTTPClientError(operation: "parse response head", code: EBADMSG)
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw RawHTTPClientError(operation: "parse status line", code: EBADMSG)
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].drop(while: { $0 == " " })
            headers[line[..<colon].lowercased()] = String(value)
        }
        return RawHTTPResponse(status: status, headers: headers, body: Array(bytes[(end + separator.count)...]))
    }
}

extension RawHTTPClient {
    /// Whether this machine can bind the IPv6 loopback address (containers sometimes cannot).
    static var hasIPv6Loopback: Bool {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }
}
