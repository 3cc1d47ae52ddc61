public import Observability
import Sockets
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd that routes requests by exact path and method to
/// synchronous handlers running on the server's own threads.
///
/// Unknown paths get 404 (in plain text, listing the routes), known paths with another method
/// 405 with an `Allow` header, and bodies over `maxBodyBytes` 413 (announced or chunked; the
/// connection is then closed); the handler is not called for any of these, and
/// `answerRefusals(with:)` may give them other bodies. Paths match exactly after percent-decoding, and `%00` is not
/// decoded. A connection whose request headers or body do not arrive within the deadlines of
/// `HTTPLimits` is closed. Routes may be added before
/// or after `start()`, from any thread.
public final class HTTPServer: Sendable {
    private struct State {
        var daemon: MHDDaemon?
        var port = 0
    }

    private let host: String
    private let requestedPort: Int
    private let limits: HTTPLimits
    private let role: String
    private let tls: HTTPServerTLS?
    private let dispatcher: RequestDispatcher
    private let state = Mutex(State())

    /// A server that will listen on `host` (an IPv4 or IPv6 literal, or a name; empty for all
    /// interfaces) and `port` (0 for any free port) once started, within `limits`, over HTTPS
    /// when `tls` is given. `role` names it in its log lines (`"\(role) server listening"`).
    public init(
        host: String, port: Int, limits: HTTPLimits, role: String = "http", tls: HTTPServerTLS? = nil, logger: Logger
    ) {
        precondition(limits.maxBodyBytes >= 0, "maxBodyBytes must not be negative")
        precondition((1...Int(UInt32.max)).contains(limits.maxConnections), "maxConnections must be positive")
        precondition(
            (0...Int(UInt32.max)).contains(limits.maxConnectionsPerAddress),
            "maxConnectionsPerAddress must not be negative")
        precondition(
            (0...Int(UInt32.max)).contains(limits.idleTimeoutSeconds), "idleTimeoutSeconds must not be negative")
        precondition(limits.headerTimeout > .zero && limits.requestTimeout > .zero, "deadlines must be positive")
        precondition((1...1024).contains(limits.threads), "threads must be 1...1024")
        self.host = host
        self.requestedPort = port
        self.limits = limits
        self.role = role
        self.tls = tls
        self.dispatcher = RequestDispatcher(limits: limits, logger: logger)
    }

    /// A server with the default limits but these.
    ///
    /// - Parameters:
    ///   - maxBodyBytes: the largest request body accepted; longer ones get 413.
    ///   - connectionLimit: the most connections served at once; more are refused.
    ///   - timeoutSeconds: how long a silent connection is kept open (0: forever).
    ///   - threads: how many threads poll connections and run handlers.
    ///   - logger: where start, stop and response failures are logged.
    public convenience init(
        host: String, port: Int, maxBodyBytes: Int = 1 << 20, connectionLimit: Int = 256, timeoutSeconds: Int = 10,
        threads: Int = 2, logger: Logger
    ) {
        self.init(
            host: host, port: port,
            limits: HTTPLimits(
                maxBodyBytes: maxBodyBytes, maxConnections: connectionLimit, idleTimeoutSeconds: timeoutSeconds,
                threads: threads),
            logger: logger)
    }

    deinit { stop() }

    /// Sends requests for `method` (compared uppercased) and the exact `path` to `handler`,
    /// replacing an earlier handler for both. A `path` ending in `/*` takes every path below it
    /// that has no exact route (the longest such prefix wins). Safe to call from any thread, also while running.
    public func route(_ method: String, _ path: String, _ handler: @escaping HTTPHandler) {
        dispatcher.route(method, path, handler)
    }

    /// Answers the requests the server refuses (`HTTPRefusal`: 404, 405, 413) with `answer`'s
    /// headers and body instead of plain text; the status stays the refusal's, and the server still
    /// adds `Allow` to a 405 and `Connection: close` to a 413. Safe to call from any thread, also
    /// while running.
    public func answerRefusals(with answer: @escaping HTTPRefusalAnswer) {
        dispatcher.answerRefusals(with: answer)
    }

    /// Binds and starts serving. Tries each address `host` resolves to until one binds.
    ///
    /// - Throws: `HTTPServerError` with code `.invalidAddress` when the host does not resolve or
    ///   the port is out of range, `.cannotListen` when binding fails (e.g. the address is in use),
    ///   `.alreadyStarted` when the server is running.
    public func start() throws(HTTPServerError) {
        try state.withLock { state throws(HTTPServerError) in
            guard state.daemon == nil else {
                throw HTTPServerError(.alreadyStarted, "HTTP server already listening on port \(state.port)")
            }
            guard (0...65535).contains(requestedPort) else {
                throw HTTPServerError(.invalidAddress, "invalid port \(requestedPort): must be 0...65535")
            }
            let addresses: [SocketAddress]
            do throws(SocketAddress.ResolveError) {
                addresses = try SocketAddress.resolve(host: host, port: requestedPort, passive: true)
            } catch {
                throw HTTPServerError(.invalidAddress, "cannot resolve host \"\(host)\": \(error.reason)")
            }
            var firstError: HTTPServerError?
            for address in addresses {
                do throws(HTTPServerError) {
                    let daemon = try MHDDaemon(address: address, dispatcher: dispatcher, limits: limits, tls: tls)
                    state.daemon = daemon
                    state.port = daemon.port
                    dispatcher.logger.info(
                        "\(role) server listening",
                        ["host": host, "port": String(daemon.port), "tls": tls == nil ? "off" : "on"])
                    return
                } catch {
                    firstError = firstError ?? error
                }
            }
            throw firstError ?? HTTPServerError(.invalidAddress, "no address for host \"\(host)\"")
        }
    }

    /// The port the server listens on (the one the system chose when 0 was asked for); the last
    /// bound port after `stop()`, and 0 before the first `start()`.
    public var port: Int { state.withLock { $0.port } }

    /// Writes the server's counters of refused requests (`{prefix}_requests_refused_total` by
    /// reason: `header_timeout`, `request_timeout`, `too_large`).
    public func writeMetrics(into text: inout MetricsText, prefix: String = "http") {
        let name = "\(prefix)_requests_refused_total"
        text.family(name, type: "counter", help: "Requests cut or refused for a limit of the HTTP server.")
        text.sample(name, ["reason": "header_timeout"], Double(dispatcher.deadlines.cutCount(.headers)))
        text.sample(name, ["reason": "request_timeout"], Double(dispatcher.deadlines.cutCount(.request)))
        text.sample(name, ["reason": "too_large"], Double(dispatcher.tooLargeCount.load(ordering: .relaxed)))
    }

    /// Stops serving: closes the listening socket and the connections and waits for the server's
    /// threads to end. Idempotent; must not be called from a handler.
    public func stop() {
        guard let daemon = state.withLock({ $0.daemon.take() }) else { return }
        daemon.stop()
        dispatcher.logger.info("\(role) server stopped", ["port": String(daemon.port)])
    }
}
