/// A request the server answers itself, without calling a handler, and why.
///
/// The server adds what HTTP requires of each answer whatever its body: `Allow` on a 405 and
/// `Connection: close` on a 413.
public enum HTTPRefusal: Sendable, Equatable {
    /// No route has the path. `served` lists the server's routes as `METHOD /path`, by path.
    case notFound(method: String, path: String, served: [String])
    /// The path has routes, none for `method`; `allow` lists the methods it has, sorted.
    case methodNotAllowed(method: String, path: String, allow: [String])
    /// The body is longer than the server's `limit` (bytes), announced or as it came.
    case tooLarge(limit: Int)

    /// The HTTP status of the answer: 404, 405 or 413.
    public var status: Int {
        switch self {
        case .notFound: 404
        case .methodNotAllowed: 405
        case .tooLarge: 413
        }
    }

    /// The answer in plain text, which a server gives unless told otherwise
    /// (`HTTPServer.answerRefusals(with:)`): a 404 lists what the server serves.
    public var plainText: HTTPResponse {
        switch self {
        case .notFound(_, _, let served):
            .text(
                served.isEmpty ? "not found\n" : "not found; served here: \(served.joined(separator: ", "))\n",
                status: status)
        case .methodNotAllowed: .text("method not allowed\n", status: status)
        case .tooLarge(let limit): .text("request body exceeds \(limit) bytes\n", status: status)
        }
    }
}

/// The answer to a refused request, in place of `HTTPRefusal.plainText`. Called on one of the
/// server's threads; it must not block.
public typealias HTTPRefusalAnswer = @Sendable (HTTPRefusal) -> HTTPResponse
