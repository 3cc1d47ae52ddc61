public import Config
import Foundation
public import HTTP
public import Observability
public import RPC
public import Sockets
import Wire

/// The settings every service reads from its environment (see the table in docs/configuration.md).
public struct HostSettings: Sendable {
    public var rpcListen: HostPort
    public var httpListen: HostPort
    /// Where `/healthz`, `/readyz` and `/metrics` are also served, on a listener of their own
    /// that a flood of the main HTTP listener cannot starve; nil when turned off.
    public var opsListen: HostPort?
    public var http: HTTPLimits
    public var logLevel: String
    public var server: RPCServerConfiguration
    /// The API keys file for HTTP callers (`API_KEYS_FILE`); nil when HTTP callers present none.
    public var apiKeysFile: String?
    /// Whether `HTTP_LISTEN` is HTTPS with the TLS files (`HTTP_TLS`, on by default with them).
    public var httpTLS: Bool
    /// A clock file (`CLOCK_FILE`) whose time the service decides at instead of the machine's:
    /// the store simulator's, for a sandbox or a demo; nil runs on the machine's clock.
    public var clock: FileClock?
    /// Client-side TLS for calls this service makes to others (same files as its server side).
    public var clientTLS: TLSConfiguration? { server.tls }

    /// Reads the settings, with `defaults` for the two listening addresses.
    /// Throws `ConfigError` naming the first variable that is unusable.
    public init(environment env: EnvironmentReader, defaultRPC: String, defaultHTTP: String) throws(ConfigError) {
        rpcListen = try env.address("RPC_LISTEN", default: defaultRPC)
        httpListen = try env.address("HTTP_LISTEN", default: defaultHTTP)
        if env.raw("OPS_LISTEN") == "off" {
            opsListen = nil
        } else {
            let derivedPort = httpListen.port == 0 ? 0 : httpListen.port + 1000
            let derived = HostPort(host: httpListen.host, port: derivedPort <= 65535 ? derivedPort : 0).description
            opsListen = try env.address("OPS_LISTEN", default: derived)
        }
        var http = HTTPLimits()
        http.maxBodyBytes = try env.int("HTTP_MAX_BODY_BYTES", default: 1 << 20, range: 1024...(64 << 20))
        http.maxConnections = try env.int("HTTP_MAX_CONNECTIONS", default: 1024, range: 1...100_000)
        http.maxConnectionsPerAddress = try env.int(
            "HTTP_MAX_CONNECTIONS_PER_ADDRESS", default: 64, range: 0...100_000)
        http.headerTimeout = try env.duration(
            "HTTP_HEADER_TIMEOUT", default: .seconds(10), range: .milliseconds(100)...(.seconds(600)))
        http.requestTimeout = try env.duration(
            "HTTP_REQUEST_TIMEOUT", default: .seconds(30), range: .milliseconds(100)...(.seconds(3600)))
        guard http.requestTimeout >= http.headerTimeout else {
            throw ConfigError(
                variable: "HTTP_REQUEST_TIMEOUT", problem: "must not be shorter than HTTP_HEADER_TIMEOUT")
        }
        http.idleTimeoutSeconds = Int(
            try env.duration("HTTP_IDLE_TIMEOUT", default: .seconds(10), range: .seconds(1)...(.seconds(3600)))
                .components.seconds)
        http.threads = try env.int("HTTP_THREADS", default: 4, range: 1...256)
        self.http = http
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
        server.maxConnectionsPerAddress = try env.int(
            "RPC_MAX_CONNECTIONS_PER_ADDRESS", default: 256, range: 1...1_000_000)
        server.firstFrameTimeout = try env.duration(
            "RPC_FIRST_FRAME_TIMEOUT", default: .seconds(5), range: .milliseconds(10)...(.seconds(3600)))
        server.maxCallsPerConnection = try env.int("RPC_MAX_CALLS_PER_CONNECTION", default: 1024, range: 1...1_000_000)
        server.defaultTimeout = try env.duration(
            "RPC_DEFAULT_TIMEOUT", default: .seconds(30), range: .milliseconds(1)...(.seconds(3600)))
        server.maxTimeout = max(server.defaultTimeout, .seconds(300))
        server.shutdownGracePeriod = try env.duration(
            "SHUTDOWN_GRACE", default: .seconds(10), range: .zero...(.seconds(600)))
        apiKeysFile = try env.readableFile("API_KEYS_FILE")
        let cert = try env.readableFile("TLS_CERT")
        let key = try env.readableFile("TLS_KEY")
        let ca = try env.readableFile("TLS_CA")
        switch (cert, key, ca) {
        case (nil, nil, nil):
            server.tls = nil
            for variable in ["RPC_ALLOW", "RPC_READ_ONLY"] where env.raw(variable) != nil {
                throw ConfigError(
                    variable: variable,
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
            if let listed = env.raw("RPC_READ_ONLY") {
                server.readOnlyIdentities = try Self.readOnlyIdentities(listed)
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
        if let path = try env.readableFile("CLOCK_FILE") {
            do throws(FileClockError) {
                clock = try FileClock(path: path)
            } catch {
                throw ConfigError(variable: "CLOCK_FILE", problem: error.message)
            }
        }
        httpTLS = try env.choice("HTTP_TLS", default: "on", choices: ["on", "off"]) == "on" && server.tls != nil
        if env.raw("HTTP_TLS") == "on" && server.tls == nil {
            throw ConfigError(variable: "HTTP_TLS", problem: "needs TLS_CERT, TLS_KEY and TLS_CA")
        }
    }

    /// `RPC_READ_ONLY`: identities separated by commas, as `RPC_ALLOW` names them; an empty one
    /// (two commas in a row, a comma at an end, only spaces) is refused; an empty value is no value.
    static func readOnlyIdentities(_ text: String) throws(ConfigError) -> Set<String> {
        let identities = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !identities.contains("") else {
            throw ConfigError(
                variable: "RPC_READ_ONLY",
                problem: "expected identities separated by commas, with none empty, got \"\(text)\"")
        }
        return Set(identities)
    }
}
