/// The registered handlers by exact path and method: a plain value, shared behind a `Mutex`.
struct RouteTable {
    /// What a lookup found for a method and path.
    enum Match {
        /// A handler is registered for the method and path.
        case handler(HTTPHandler)
        /// The path is known but not with this method; `allow` lists its methods for the `Allow` header.
        case methodNotAllowed(allow: String)
        /// No handler is registered for the path.
        case notFound
    }

    private var handlers: [String: [String: HTTPHandler]] = [:]

    /// Registers `handler` for `method` (uppercased) and `path`, replacing an earlier one.
    mutating func add(_ method: String, _ path: String, _ handler: @escaping HTTPHandler) {
        handlers[path, default: [:]][method.uppercased()] = handler
    }

    /// The handler for `method` on `path`, or why there is none.
    func match(_ method: String, _ path: String) -> Match {
        guard let byMethod = handlers[path] else { return .notFound }
        guard let handler = byMethod[method] else {
            return .methodNotAllowed(allow: byMethod.keys.sorted().joined(separator: ", "))
        }
        return .handler(handler)
    }
}
