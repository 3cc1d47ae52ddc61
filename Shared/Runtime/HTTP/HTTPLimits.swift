/// What one client may cost an `HTTPServer`: bytes, connections and time. The defaults suit a
/// service that faces the internet; see "Hostile input" in docs/operations.md.
public struct HTTPLimits: Sendable, Equatable {
    /// The largest request body accepted, by `Content-Length` or as chunks arrive; a longer one
    /// gets 413 and the connection is closed.
    public var maxBodyBytes: Int = 1 << 20
    /// The most connections served at once; more are refused at accept.
    public var maxConnections: Int = 1024
    /// The most connections from one client address at once (0: no limit of its own).
    public var maxConnectionsPerAddress: Int = 0
    /// From the moment a connection waits for a request (when it opens, or when the previous
    /// request on it ended) until the request's headers are complete; past it the connection is
    /// closed, however slowly bytes keep coming.
    public var headerTimeout: Duration = .seconds(10)
    /// From the same moment until the whole body has arrived.
    public var requestTimeout: Duration = .seconds(30)
    /// How long a connection may stay silent (while a response is sent or between requests);
    /// 0 never cuts a silent one.
    public var idleTimeoutSeconds: Int = 10
    /// Threads that poll connections and run handlers.
    public var threads: Int = 2

    public init() {}

    /// The defaults with these values.
    public init(
        maxBodyBytes: Int = 1 << 20, maxConnections: Int = 1024, maxConnectionsPerAddress: Int = 0,
        headerTimeout: Duration = .seconds(10), requestTimeout: Duration = .seconds(30), idleTimeoutSeconds: Int = 10,
        threads: Int = 2
    ) {
        self.maxBodyBytes = maxBodyBytes
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.headerTimeout = headerTimeout
        self.requestTimeout = requestTimeout
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.threads = threads
    }
}
