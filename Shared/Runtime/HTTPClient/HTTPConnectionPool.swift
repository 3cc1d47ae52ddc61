public import Foundation
import Observability
import Sockets

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
/// answer is sent once more on a new connection. The sockets are non-blocking and served by
/// one epoll thread of the pool's own (`HTTPClientLoop`), never on the cooperative pool.
public final class HTTPConnectionPool: Sendable {
    private let requestTimeout: TimeInterval
    private let maxResponseBytes: Int
    private let maxIdle: Int
    private let loop: HTTPClientLoop

    /// A pool whose exchanges give up after `requestTimeout` seconds in all, whose answers may
    /// carry at most `maxResponseBytes` of body, and which keeps at most `maxIdle` idle
    /// connections a host. With `maxActive`, at most that many exchanges are under way at
    /// once: the others wait their turn in the order given (their `requestTimeout` counted
    /// from when they start), and each starts as soon as one ends.
    public init(requestTimeout: TimeInterval, maxResponseBytes: Int, maxIdle: Int, maxActive: Int = .max) {
        self.requestTimeout = requestTimeout
        self.maxResponseBytes = maxResponseBytes
        self.maxIdle = maxIdle
        loop = HTTPClientLoop(maxIdle: maxIdle, maxActive: max(1, maxActive))
    }

    deinit { loop.stop() }

    /// Whether the pool can send to `url` (plain `http`, with a host).
    public static func accepts(_ url: URL) -> Bool { url.scheme?.lowercased() == "http" && url.host != nil }

    /// Sends `request` (an `http://` URL) and waits for the whole answer, or for the reason
    /// there is none.
    public func perform(_ request: URLRequest) async -> Result<
        HTTPClientTransport.Response, HTTPClientTransport.Failure
    > {
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
        guard let request = Request(method, url, headers: headers, body: body) else {
            return .failure(.network("not an http URL"))
        }
        return await withCheckedContinuation { continuation in
            let reply: Reply = { continuation.resume(returning: $0) }
            submit([(request, reply)])
        }
    }

    /// An exchange's answer, or the reason there is none.
    public typealias Outcome = Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>
    /// Takes an exchange's outcome, on the pool's thread.
    public typealias Reply = @Sendable (Outcome) -> Void

    /// One request as the pool sends it: its bytes, whole, and where they go.
    public struct Request: Sendable {
        let message: [UInt8]
        let target: HostPort

        /// `body` to `url` (`http://`, else nil) by `method` with `headers`, as `perform` takes them.
        public init?(_ method: String, _ url: URL, headers: [(String, String)], body: [UInt8]) {
            guard HTTPConnectionPool.accepts(url), let host = url.host else { return nil }
            target = HostPort(host: host, port: url.port ?? 80)
            var message = HTTPConnectionPool.head(method, url, headers: headers, bodyCount: body.count)
            message.append(contentsOf: body)
            self.message = message
        }
    }

    /// Sends each request without waiting: its `reply` gets the whole answer, or the reason
    /// there is none, on the pool's thread (so it must not block; it may hand the answer on).
    /// All of them are handed to that thread at once, for a sender with many to send.
    public func submit(_ requests: [(Request, Reply)]) {
        let timeout = UInt64(requestTimeout * 1e9)
        loop.submit(
            requests.map { request, reply in
                HTTPClientLoop.Exchange(
                    message: request.message, target: request.target, timeout: timeout, maxBody: maxResponseBytes,
                    reply: reply)
            })
    }

    /// The request line and headers, ending in the empty line.
    static func head(_ method: String, _ url: URL, headers: [(String, String)], bodyCount: Int) -> [UInt8] {
        var path = url.path.isEmpty ? "/" : url.path
        if let query = url.query { path += "?" + query }
        let host = url.host ?? ""
        // Written as bytes into one buffer sized for the usual head and the body after it.
        var text: [UInt8] = []
        text.reserveCapacity(512 + bodyCount)
        text.append(contentsOf: method.utf8)
        text.append(UInt8(ascii: " "))
        text.append(contentsOf: path.utf8)
        text.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        text.append(contentsOf: host.utf8)
        if let port = url.port {
            text.append(UInt8(ascii: ":"))
            text.append(contentsOf: String(port).utf8)
        }
        text.append(contentsOf: "\r\n".utf8)
        var traced = false
        for (name, value) in headers {
            if isNamed(name, "host") || isNamed(name, "content-length") || isNamed(name, "connection") { continue }
            if isNamed(name, TraceContext.headerName) { traced = true }
            text.append(contentsOf: name.utf8)
            text.append(contentsOf: ": ".utf8)
            text.append(contentsOf: value.utf8)
            text.append(contentsOf: "\r\n".utf8)
        }
        if !traced {
            text.append(contentsOf: TraceContext.headerName.utf8)
            text.append(contentsOf: ": ".utf8)
            text.append(
                contentsOf: TraceContext.outgoing().traceparentCString.dropLast().lazy.map { UInt8(bitPattern: $0) })
            text.append(contentsOf: "\r\n".utf8)
        }
        text.append(contentsOf: "Content-Length: ".utf8)
        text.append(contentsOf: String(bodyCount).utf8)
        text.append(contentsOf: "\r\n\r\n".utf8)
        return text
    }

    /// Whether header `name` is `lowercased` in any case (ASCII), without making a copy.
    private static func isNamed(_ name: String, _ lowercased: String) -> Bool {
        name.utf8.count == lowercased.utf8.count
            && zip(name.utf8, lowercased.utf8).allSatisfy { (0x41...0x5A).contains($0) ? $0 | 0x20 == $1 : $0 == $1 }
    }
}
