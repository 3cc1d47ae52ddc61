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
    /// connections a host.
    public init(requestTimeout: TimeInterval, maxResponseBytes: Int, maxIdle: Int) {
        self.requestTimeout = requestTimeout
        self.maxResponseBytes = maxResponseBytes
        self.maxIdle = maxIdle
        loop = HTTPClientLoop(maxIdle: maxIdle)
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
        guard Self.accepts(url), let host = url.host else { return .failure(.network("not an http URL")) }
        let target = HostPort(host: host, port: url.port ?? 80)
        let message = Self.head(method, url, headers: headers, bodyCount: body.count) + body
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(requestTimeout * 1e9)
        return await withCheckedContinuation { continuation in
            loop.submit(
                HTTPClientLoop.Exchange(
                    message: message, target: target, deadline: deadline, maxBody: maxResponseBytes,
                    continuation: continuation))
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
}
