public import Config
import Foundation
public import RPC
import Wire

/// The settings every service reads from its environment (see the README's table).
public struct HostSettings: Sendable {
    public var rpcListen: HostPort
    public var httpListen: HostPort
    public var logLevel: String
    public var server: RPCServerConfiguration
    /// Client-side TLS for calls this service makes to others (same files as its server side).
    public var clientTLS: TLSConfiguration? { server.tls }

    /// Reads the settings, with `defaults` for the two listening addresses.
    /// Throws `ConfigError` naming the first variable that is unusable.
    public init(environment env: EnvironmentReader, defaultRPC: String, defaultHTTP: String) throws(ConfigError) {
        rpcListen = try env.address("RPC_LISTEN", default: defaultRPC)
        httpListen = try env.address("HTTP_LISTEN", default: defaultHTTP)
        logLevel = try env.choice("LOG_LEVEL", default: "info", choices: ["debug", "info", "warning", "error"])
        var server = RPCServerConfiguration()
        server.host = rpcListen.host
        server.port = rpcListen.port
        server.threads = try env.int(
            "RPC_THREADS", default: min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)), range: 1...64)
        server.maxFrameLength = try env.int("RPC_MAX_FRAME_BYTES", default: 1 << 20, range: 1024...(64 << 20))
        server.readTimeout = try env.duration(
            "RPC_READ_TIMEOUT", default: .seconds(10), range: .milliseconds(10)...(.seconds(3600)))
        server.idleTimeout = try env.duration(
            "RPC_IDLE_TIMEOUT", default: .seconds(300), range: .milliseconds(10)...(.seconds(86400)))
        server.maxConnections = try env.int("RPC_MAX_CONNECTIONS", default: 1024, range: 1...1_000_000)
        server.maxCallsPerConnection = try env.int("RPC_MAX_CALLS_PER_CONNECTION", default: 1024, range: 1...1_000_000)
        server.defaultTimeout = try env.duration(
            "RPC_DEFAULT_TIMEOUT", default: .seconds(30), range: .milliseconds(1)...(.seconds(3600)))
        server.maxTimeout = max(server.defaultTimeout, .seconds(300))
        server.shutdownGracePeriod = try env.duration(
            "SHUTDOWN_GRACE", default: .seconds(10), range: .zero...(.seconds(600)))
        let cert = try env.readableFile("TLS_CERT")
        let key = try env.readableFile("TLS_KEY")
        let ca = try env.readableFile("TLS_CA")
        switch (cert, key, ca) {
        case (nil, nil, nil):
            server.tls = nil
            if env.raw("RPC_ALLOW") != nil {
                throw ConfigError(
                    variable: "RPC_ALLOW",
                    problem: "needs mutual TLS (TLS_CERT, TLS_KEY, TLS_CA): plaintext callers have no identity")
            }
        case (let cert?, let key?, let ca?):
            server.tls = TLSConfiguration(certificatePath: cert, keyPath: key, caPath: ca)
            if let rules = env.raw("RPC_ALLOW") {
                do {
                    server.accessPolicy = try AccessPolicy(parsing: rules)
                } catch {
                    throw ConfigError(variable: "RPC_ALLOW", problem: error.message)
                }
            }
        default:
            let missing = [("TLS_CERT", cert), ("TLS_KEY", key), ("TLS_CA", ca)].filter { $0.1 == nil }.map(\.0)
            throw ConfigError(
                variable: missing[0],
                problem:
                    "mutual TLS needs TLS_CERT, TLS_KEY and TLS_CA together; \(missing.joined(separator: ", ")) missing"
            )
        }
        self.server = server
    }
}
