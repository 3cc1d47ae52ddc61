/// The registered handlers by path and method: a plain value, shared behind a `Mutex`.
struct RouteTable {
    /// What a lookup found for a method and path.
    enum Match {
        /// A handler is registered for the method and path.
        case handler(HTTPHandler)
        /// The path is known but not with this method; `allow` lists its methods, sorted.
        case methodNotAllowed(allow: [String])
        /// No handler is registered for the path.
        case notFound
    }

    private var handlers: [String: [String: HTTPHandler]] = [:]
    /// Routes registered as `prefix/*`, longest prefix first.
    private var prefixes: [(prefix: String, byMethod: [String: HTTPHandler])] = []

    /// Registers `handler` for `method` (uppercased) and `path`, replacing an earlier one. A path
    /// ending in `/*` stands for every path below it (`/a/*` matches `/a/b` and `/a/b/c`, not
    /// `/a`); an exact path wins over it, and a longer prefix over a shorter one.
    mutating func add(_ method: String, _ path: String, _ handler: @escaping HTTPHandler) {
        guard path.hasSuffix("/*") else {
            handlers[path, default: [:]][method.uppercased()] = handler
            return
        }
        let prefix = String(path.dropLast())
        if let index = prefixes.firstIndex(where: { $0.prefix == prefix }) {
            prefixes[index].byMethod[method.uppercased()] = handler
        } else {
            prefixes.append((prefix, [method.uppercased(): handler]))
            prefixes.sort { $0.prefix.utf8.count > $1.prefix.utf8.count }
        }
    }

    /// The handler for `method` on `path`, or why there is none.
    func match(_ method: String, _ path: String) -> Match {
        guard
            let byMethod = handlers[path]
                ?? prefixes.first(where: { path.hasPrefix($0.prefix) && path.utf8.count > $0.prefix.utf8.count })?
                .byMethod
        else { return .notFound }
        guard let handler = byMethod[method] else {
            return .methodNotAllowed(allow: byMethod.keys.sorted())
        }
        return .handler(handler)
    }

    /// Every route as `METHOD /path` (a prefix route as `/path/*`), by path, then method.
    var served: [String] {
        let exact = handlers.flatMap { path, byMethod in byMethod.keys.map { (path, $0) } }
        let below = prefixes.flatMap { prefix, byMethod in byMethod.keys.map { (prefix + "*", $0) } }
        return (exact + below).sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map { "\($0.1) \($0.0)" }
    }
}
