public import Foundation
import Glibc
import Observability
import Sockets
import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// HTTP/1.1 exchanges with `http://` URLs over kept-alive TCP connections, for a sender of many
/// small requests to few hosts (webhook deliveries): each connection carries one exchange at a
/// time and goes back to the pool when its answer was read whole and the server did not ask to
/// close it, so a request costs one write and one read rather than a connect. Same rules as
/// `HTTPClientTransport`: the answer's body is read up to a limit, redirects are never followed,
/// nothing is cached or stored in cookies, and each request carries a `traceparent` header.
/// A request that finds its kept-alive connection closed by the server before any byte of an
/// answer is sent once more on a new connection. The blocking socket calls run on serial
/// Dispatch queues of the pool's own, one an exchange in progress, never on the cooperative pool.
public final class HTTPConnectionPool: Sendable {
    private let requestTimeout: TimeInterval
    private let maxResponseBytes: Int
    private let maxIdle: Int
    private let idle = Mutex<[HostPort: [HTTPConnection]]>([:])
    /// Serial queues not running an exchange now. Each exchange blocks one of them; a serial
    /// queue of its own gets a thread of its own, where a concurrent queue would share the
    /// few threads of the global pool (as many as cores) with Swift's tasks.
    private let freeQueues = Mutex<[DispatchQueue]>([])

    /// A pool whose exchanges give up after `requestTimeout` seconds in all, whose answers may
    /// carry at most `maxResponseBytes` of body, and which keeps at most `maxIdle` idle
    /// connections a host.
    public init(requestTimeout: TimeInterval, maxResponseBytes: Int, maxIdle: Int) {
        self.requestTimeout = requestTimeout
        self.maxResponseBytes = maxResponseBytes
        self.maxIdle = maxIdle
    }

    /// Whether the pool can send to `url` (plain `http`, with a host).
    public static func accepts(_ url: URL) -> Bool { url.scheme?.lowercased() == "http" && url.host != nil }

    /// Sends `request` (an `http://` URL) and waits for the whole answer, or for the reason
    /// there is none.
    public func perform(_ request: URLRequest) async -> Result<HTTPClientTransport.Response, HTTPClientTransport.Failure> {
        guard let url = request.url else { return .failure(.network("not an http URL")) }
        let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return await perform(
            request.httpMethod ?? "GET", url, headers: headers, body: request.httpBody.map { Array($0) } ?? [])
    }

    /// Sends `body` to `url` (`http://`) by `method` with `headers` (a `Host`, `Content-Length`
    /// or `Connection` among them is left out: the pool writes its own) and waits for the whole
    /// answer, or for the reason there is none.
    public func perform(_ method: String, _ url: URL, headers: [(String, String)], body: [UInt8]) async -> Result<
        HTTPClientTransport.Response, HTTPClientTransport.Failure
    > {
        if Task.isCancelled { return .failure(.cancelled) }
        guard Self.accepts(url), let host = url.host else { return .failure(.network("not an http URL")) }
        let target = HostPort(host: host, port: url.port ?? 80)
        let message = Self.head(method, url, headers: headers, bodyCount: body.count) + body
        let queue = freeQueues.withLock { $0.popLast() } ?? DispatchQueue(label: "http-connection-pool")
        return await withCheckedContinuation { continuation in
            queue.async {
                let outcome = self.exchange(message, target: target)
                self.freeQueues.withLock { $0.append(queue) }
                continuation.resume(returning: outcome)
            }
        }
    }

    /// The request line and headers, ending in the empty line.
    static func head(_ method: String, _ url: URL, headers: [(String, String)], bodyCount: Int) -> [UInt8] {
        var path = url.path.isEmpty ? "/" : url.path
        if let query = url.query { path += "?" + query }
        let host = url.host ?? ""
        var text = method + " " + path + " HTTP/1.1\r\nHost: " + (url.port.map { host + ":" + String($0) } ?? host)
        text += "\r\n"
        var traced = false
        for (name, value) in headers {
            let lowered = name.lowercased()
            if lowered == "host" || lowered == "content-length" || lowered == "connection" { continue }
            if lowered == TraceContext.headerName { traced = true }
            text += name + ": " + value + "\r\n"
        }
        if !traced { text += TraceContext.headerName + ": " + TraceContext.outgoing().traceparent + "\r\n" }
        text += "Content-Length: " + String(bodyCount) + "\r\n\r\n"
        return Array(text.utf8)
    }

    /// One exchange on a kept-alive connection when there is one, else on a new one; once more on
    /// a new connection when a kept-alive one turns out closed before any byte of an answer.
    private func exchange(_ message: [UInt8], target: HostPort) -> Result<
        HTTPClientTransport.Response, HTTPClientTransport.Failure
    > {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(requestTimeout * 1e9)
        while true {
            let reused = idle.withLock { $0[target]?.popLast() }
            let connection: HTTPConnection
            if let reused {
                connection = reused
            } else {
                switch HTTPConnection.open(target, deadline: deadline) {
                case .success(let opened): connection = opened
                case .failure(let failure): return .failure(failure)
                }
            }
            switch connection.exchange(message, deadline: deadline, maxBody: maxResponseBytes) {
            case .answered(let response, let keep):
                if keep { give(back: connection, target) }
                return .success(response)
            case .closedBeforeAnswer where reused != nil:
                continue
            case .closedBeforeAnswer:
                return .failure(.network("connection lost"))
            case .failed(let failure):
                return .failure(failure)
            }
        }
    }

    private func give(back connection: HTTPConnection, _ target: HostPort) {
        idle.withLock { idle in
            if idle[target, default: []].count < maxIdle { idle[target, default: []].append(connection) }
        }
    }
}

/// One TCP connection of `HTTPConnectionPool`: owns the socket, closed in `deinit`. Used by one
/// exchange at a time (taken out of the pool's idle list while in use).
final class HTTPConnection: @unchecked Sendable {
    // @unchecked: the pool hands a connection to one exchange at a time, under its lock.
    private let descriptor: Int32
    /// Bytes read past the last answer (none, when the server keeps to one answer a request).
    private var buffer: [UInt8] = []

    private init(descriptor: Int32) { self.descriptor = descriptor }
    deinit { close(descriptor) }

    enum Outcome {
        case answered(HTTPClientTransport.Response, keep: Bool)
        /// The server closed the connection (or reset it) before sending a byte of an answer.
        case closedBeforeAnswer
        case failed(HTTPClientTransport.Failure)
    }

    static func open(_ target: HostPort, deadline: UInt64) -> Result<HTTPConnection, HTTPClientTransport.Failure> {
        let addresses: [SocketAddress]
        do { addresses = try SocketAddress.resolve(host: target.host, port: target.port) } catch {
            return .failure(.network("host not found"))
        }
        var last = HTTPClientTransport.Failure.network("connection refused")
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            let connection = HTTPConnection(descriptor: fd)
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            let rc = address.withSockAddr { connect(fd, $0, $1) }
            if rc == 0 { return .success(connection) }
            guard errno == EINPROGRESS else { continue }
            switch connection.wait(for: Int16(POLLOUT), deadline: deadline) {
            case .failure(let failure):
                last = failure
                continue
            case .success:
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error == 0 { return .success(connection) }
            }
        }
        return .failure(last)
    }

    /// Waits until the socket is ready for `events`, or the deadline passes.
    private func wait(for events: Int16, deadline: UInt64) -> Result<Void, HTTPClientTransport.Failure> {
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { return .failure(.network(HTTPClientTransport.Failure.timedOutCause)) }
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let rc = poll(&entry, 1, Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
            if rc > 0 { return .success(()) }
            if rc < 0, errno != EINTR { return .failure(.network("connection lost")) }
        }
    }

    /// Writes `message` and reads one answer.
    func exchange(_ message: [UInt8], deadline: UInt64, maxBody: Int) -> Outcome {
        var written = 0
        while written < message.count {
            let count = message.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + written, message.count - written, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                written += count
            } else if count < 0, errno == EAGAIN || errno == EINTR {
                if case .failure(let failure) = wait(for: Int16(POLLOUT), deadline: deadline) {
                    return .failed(failure)
                }
            } else {
                return errno == EPIPE || errno == ECONNRESET
                    ? .closedBeforeAnswer : .failed(.network("connection lost"))
            }
        }
        return readAnswer(deadline: deadline, maxBody: maxBody)
    }

    /// Reads more bytes into `buffer`; false at the end of the stream.
    private func fill(deadline: UInt64) -> Result<Bool, HTTPClientTransport.Failure> {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress!, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[..<count])
                return .success(true)
            }
            if count == 0 { return .success(false) }
            if errno == EAGAIN || errno == EINTR {
                if case .failure(let failure) = wait(for: Int16(POLLIN), deadline: deadline) {
                    return .failure(failure)
                }
                continue
            }
            if errno == ECONNRESET { return .success(false) }
            return .failure(.network("connection lost"))
        }
    }

    private func readAnswer(deadline: UInt64, maxBody: Int) -> Outcome {
        var parsed: HTTPResponseHead
        repeat {
            // The head: up to the empty line (an interim 1xx answer is skipped).
            var end: Int?
            while true {
                end = HTTPResponseHead.end(in: buffer)
                if end != nil { break }
                guard buffer.count < 64 * 1024 else { return .failed(.network("malformed HTTP answer")) }
                let sawBytes = !buffer.isEmpty
                switch fill(deadline: deadline) {
                case .failure(let failure): return .failed(failure)
                case .success(true): continue
                case .success(false): return sawBytes ? .failed(.network("connection lost")) : .closedBeforeAnswer
                }
            }
            guard let end, let head = HTTPResponseHead(buffer[..<end]) else {
                return .failed(.network("malformed HTTP answer"))
            }
            buffer.removeFirst(end)
            parsed = head
        } while (100..<200).contains(parsed.status)
        // The body: by its length, in chunks, or up to the end of the stream.
        var body: [UInt8] = []
        var keep = parsed.keepAlive
        if parsed.status == 204 || parsed.status == 304 {
        } else if parsed.chunked {
            while true {
                guard let size = readChunkSize(deadline: deadline) else {
                    return .failed(.network("malformed HTTP answer"))
                }
                if size == 0 {
                    // Trailers, if any, up to the empty line.
                    while true {
                        guard let line = readLine(deadline: deadline) else {
                            return .failed(.network("connection lost"))
                        }
                        if line.isEmpty { break }
                    }
                    break
                }
                guard body.count + size <= maxBody else { return .failed(.tooLarge(limit: maxBody)) }
                guard case .success = readExactly(size, into: &body, deadline: deadline),
                    let crlf = readLine(deadline: deadline), crlf.isEmpty
                else { return .failed(.network("connection lost")) }
            }
        } else if let length = parsed.contentLength {
            guard length <= maxBody else { return .failed(.tooLarge(limit: maxBody)) }
            if case .failure(let failure) = readExactly(length, into: &body, deadline: deadline) {
                return .failed(failure)
            }
        } else {
            keep = false
            while true {
                body.append(contentsOf: buffer)
                buffer = []
                guard body.count <= maxBody else { return .failed(.tooLarge(limit: maxBody)) }
                switch fill(deadline: deadline) {
                case .failure(let failure): return .failed(failure)
                case .success(true): continue
                case .success(false): break
                }
                break
            }
        }
        return .answered(.init(status: parsed.status, headers: parsed.headers, body: Data(body)), keep: keep)
    }

    private func readExactly(_ count: Int, into body: inout [UInt8], deadline: UInt64) -> Result<
        Void, HTTPClientTransport.Failure
    > {
        while buffer.count < count {
            switch fill(deadline: deadline) {
            case .failure(let failure): return .failure(failure)
            case .success(true): continue
            case .success(false): return .failure(.network("connection lost"))
            }
        }
        body.append(contentsOf: buffer[..<count])
        buffer.removeFirst(count)
        return .success(())
    }

    /// One line without its CRLF, or nil when the stream ends first.
    private func readLine(deadline: UInt64) -> [UInt8]? {
        while true {
            if let index = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[..<index])
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                buffer.removeFirst(index + 1)
                return line
            }
            guard buffer.count < 8 * 1024, case .success(true) = fill(deadline: deadline) else { return nil }
        }
    }

    private func readChunkSize(deadline: UInt64) -> Int? {
        guard let line = readLine(deadline: deadline) else { return nil }
        let digits = String(decoding: line.prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self)
            .trimmingCharacters(in: .whitespaces)
        return Int(digits, radix: 16).flatMap { $0 >= 0 ? $0 : nil }
    }
}

/// An HTTP/1.x answer's status line and headers.
struct HTTPResponseHead: Equatable {
    let status: Int
    /// Lowercased names; a repeated header's values joined by ", ".
    let headers: [String: String]
    let http10: Bool

    /// Where the head ends (just past the empty line) in `bytes`, if it is all there.
    static func end(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// Reads a head (the empty line included); nil when it is not HTTP/1.x.
    init?(_ bytes: ArraySlice<UInt8>) {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            var end = index
            if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            if end > start { lines.append(bytes[start..<end]) }
            start = index + 1
        }
        // "HTTP/1.x NNN": the version, a space, three digits.
        guard let first = lines.first, first.count >= 12, first.starts(with: Array("HTTP/1.".utf8)),
            first[first.startIndex + 8] == UInt8(ascii: " ")
        else { return nil }
        var status = 0
        for digit in first[(first.startIndex + 9)..<(first.startIndex + 12)] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            status = status * 10 + Int(digit - UInt8(ascii: "0"))
        }
        guard status >= 100, first.count == 12 || first[first.startIndex + 12] == UInt8(ascii: " ") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            var value = line[(colon + 1)...]
            while let byte = value.first, byte == 32 || byte == 9 { value.removeFirst() }
            while let byte = value.last, byte == 32 || byte == 9 { value.removeLast() }
            let text = String(decoding: value, as: UTF8.self)
            headers[name] = headers[name].map { $0 + ", " + text } ?? text
        }
        self.status = status
        self.headers = headers
        http10 = first[first.startIndex + 7] == UInt8(ascii: "0")
    }

    var chunked: Bool { headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false }
    var contentLength: Int? { headers["content-length"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil } }

    /// Whether the connection may carry another exchange after this answer.
    var keepAlive: Bool {
        let connection = headers["connection"]?.lowercased() ?? ""
        return http10 ? connection.contains("keep-alive") : !connection.contains("close")
    }
}
