import CShims
import Foundation
import Glibc
import Wire

/// Limits and options of an `RPCServer`. Defaults suit a service on one machine.
public struct RPCServerConfiguration: Sendable {
    /// Address to listen on; port 0 asks the system for a free one.
    public var host: String = "127.0.0.1"
    public var port: Int = 0
    /// Event loop threads; connections are spread over them.
    public var threads: Int = 2
    /// Frames longer than this close the connection before anything is allocated.
    public var maxFrameLength: Int = 1 << 20
    /// A frame (or TLS handshake) that has started must complete within this time.
    public var readTimeout: Duration = .seconds(10)
    /// A connection with no call in flight and no traffic for this long is closed.
    public var idleTimeout: Duration = .seconds(300)
    /// A new connection must complete its first frame (and its TLS handshake) within this time.
    public var firstFrameTimeout: Duration = .seconds(5)
    /// At the cap, the connection that has sent no frame for longest (one that never sent any
    /// first), among those with no call in flight, is closed to admit the new one.
    public var maxConnections: Int = 1024
    /// Connections from one IP address at once; more are closed at accept.
    public var maxConnectionsPerAddress: Int = 256
    public var maxCallsPerConnection: Int = 1024
    /// Applied when a request carries no timeout; also the longest a request may ask for.
    public var defaultTimeout: Duration = .seconds(30)
    public var maxTimeout: Duration = .seconds(300)
    /// How long a graceful shutdown waits for calls in flight.
    public var shutdownGracePeriod: Duration = .seconds(10)
    /// Mutual TLS; nil serves plaintext (loopback development).
    public var tls: TLSConfiguration?
    /// Who may call what; consulted only with TLS, where callers have identities.
    public var accessPolicy: AccessPolicy = .allowAuthenticated
    /// The identities with the read-only role (`RPC_READ_ONLY`): a caller with any of them may
    /// call only the methods that change nothing (`@read`), and its answers are redacted
    /// (`ProtoMessage.redacted()`). The access policy holds it too.
    public var readOnlyIdentities: Set<String> = []

    /// The time deadlines, timers and latency figures run on.
    public var clock: any ServiceClock = SystemClock()

    public init() {}
}
