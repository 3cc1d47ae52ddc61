import Observability
import Synchronization

/// Decides what each request gets: routes it when its headers arrive, refuses it early when it
/// cannot be served (404, 405, 413 by `Content-Length`), and calls the handler once the body is in.
/// Shared by all of a server's libmicrohttpd threads.
final class RequestDispatcher: Sendable {
    /// What to do once a request's headers have arrived.
    enum Start {
        /// Read the body into this request, then call `finish`.
        case readBody(PendingRequest)
        /// Answer right away without reading the body.
        case respond(HTTPResponse)
    }

    let maxBodyBytes: Int
    let logger: Logger
    /// The header and request deadlines of the server's connections.
    let deadlines: ConnectionDeadlines
    /// Requests refused with 413.
    let tooLargeCount = Atomic<Int>(0)
    private let routes = Mutex(RouteTable())

    init(limits: HTTPLimits, logger: Logger) {
        self.maxBodyBytes = limits.maxBodyBytes
        self.logger = logger
        // The server keeps its logger's time.
        deadlines = ConnectionDeadlines(
            headerTimeout: limits.headerTimeout, requestTimeout: limits.requestTimeout, clock: logger.clock)
    }

    /// Registers `handler` for `method` and `path`; takes effect for requests whose headers arrive later.
    func route(_ method: String, _ path: String, _ handler: @escaping HTTPHandler) {
        routes.withLock { $0.add(method, path, handler) }
    }

    /// Resolves the route for a request whose headers have arrived.
    func start(method: String, path: String, contentLength: Int?) -> Start {
        switch routes.withLock({ $0.match(method, path) }) {
        case .notFound:
            return .respond(.text("not found\n", status: 404))
        case .methodNotAllowed(let allow):
            var response = HTTPResponse.text("method not allowed\n", status: 405)
            response.headers.append(("Allow", allow))
            return .respond(response)
        case .handler(let handler):
            if let contentLength, contentLength > maxBodyBytes { return .respond(tooLarge()) }
            return .readBody(PendingRequest(handler: handler, limit: maxBodyBytes, expectedLength: contentLength))
        }
    }

    /// The answer to a request whose body has fully arrived; `request` is built only when the
    /// handler is called.
    func finish(_ pending: PendingRequest, request: () -> HTTPRequest) -> HTTPResponse {
        pending.isOverLimit ? tooLarge() : pending.handler(request())
    }

    /// The 413 answer, counted.
    func tooLarge() -> HTTPResponse {
        tooLargeCount.add(1, ordering: .relaxed)
        var response = HTTPResponse.text("request body exceeds \(maxBodyBytes) bytes\n", status: 413)
        response.headers.append(("Connection", "close"))
        return response
    }
}
