public import Sockets
public import Wire

/// Options of an `RPCClient`.
public struct RPCClientConfiguration: Sendable {
    /// Mutual TLS; nil speaks plaintext.
    public var tls: TLSConfiguration?
    /// Applied to unary calls that give no timeout and run outside any handler.
    public var defaultTimeout: Duration = .seconds(30)
    public var connectTimeout: Duration = .seconds(5)
    /// Reconnect backoff: doubles from `initialBackoff` up to `maxBackoff`, each delay drawn
    /// uniformly from its upper half.
    public var initialBackoff: Duration = .milliseconds(100)
    public var maxBackoff: Duration = .seconds(10)
    public var maxFrameLength: Int = 1 << 20
    /// Stream credit: how many messages the server may send ahead of the reader (at most 4096).
    public var streamWindow: UInt32 = 64
    /// Turns a configured host and port into addresses; the system resolver by default. It
    /// runs off the client's event loop, so it may block.
    public var resolver: @Sendable (_ host: String, _ port: Int) throws(RPCError) -> [SocketAddress] = {
        host, port throws(RPCError) in try SocketAddress.resolveForRPC(host: host, port: port)
    }

    /// The time deadlines, timers and backoffs run on.
    public var clock: any ServiceClock = SystemClock()

    public init(tls: TLSConfiguration? = nil) { self.tls = tls }
}
