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
    /// How refusals are answered: `HTTPRefusal.plainText` unless the server is told otherwise.
    private let refusalAnswer = Mutex<HTTPRefusalAnswer>({ $0.plainText })

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

    /// Answers refusals with `answer` from now on.
    func answerRefusals(with answer: @escaping HTTPRefusalAnswer) {
        refusalAnswer.withLock { $0 = answer }
    }

    /// Resolves the route for a request whose headers have arrived.
    func start(method: String, path: String, contentLength: Int?) -> Start {
        let (match, served) = routes.withLock { table in
            let match = table.match(method, path)
            guard case .notFound = match else { return (match, [String]()) }
            return (match, table.served)
        }
        switch match {
        case .notFound:
            return .respond(refuse(.notFound(method: method, path: path, served: served)))
        case .methodNotAllowed(let allow):
            var response = refuse(.methodNotAllowed(method: method, path: path, allow: allow))
            response.headers.append(("Allow", allow.joined(separator: ", ")))
            return .respond(response)
        case .handler(let handler):
            if let contentLength, contentLength > maxBodyBytes { return .respond(tooLarge()) }
            return .readBody(PendingRequest(handler: handler, limit: maxBodyBytes, expectedLength: contentLength))
        }
    }

    /// The answer to a request whose body has fully arrived; `request` is built only when the
    /// handler is called. The handler runs under the trace its `traceparent` header names, or a
    /// new one when it has none or an invalid one (`TraceContext.current`).
    func finish(_ pending: PendingRequest, request: () -> HTTPRequest) -> HTTPResponse {
        guard !pending.isOverLimit else { return tooLarge() }
        let request = request()
        return TraceContext.$current.withValue(.continuing(request.headers[TraceContext.headerName])) {
            pending.handler(request)
        }
    }

    /// The 413 answer, counted.
    func tooLarge() -> HTTPResponse {
        tooLargeCount.add(1, ordering: .relaxed)
        var response = refuse(.tooLarge(limit: maxBodyBytes))
        response.headers.append(("Connection", "close"))
        return response
    }

    /// The answer to `refusal`, with its status whatever the answer says.
    private func refuse(_ refusal: HTTPRefusal) -> HTTPResponse {
        var response = refusalAnswer.withLock { $0 }(refusal)
        response.status = refusal.status
        return response
    }
}
