public import Config
public import Connect
public import Foundation
public import HTTP
public import Lifecycle
public import Observability
public import RPC
import Sockets
import Synchronization
public import Wire

/// Everything a service process has in common: configuration, logging, the RPC server with a
/// `Health` method, the HTTP server with `/healthz`, `/readyz` and `/metrics`, and a drain on
/// SIGTERM. A service registers its methods on `router` and its parts with `add`, then `run`s.
public final class ServiceHost: Sendable {
    public let name: String
    public let version: String
    public let settings: HostSettings
    public let logger: Logger
    public let router = RPCRouter()
    public let metrics = MetricsRegistry()
    public let http: HTTPServer
    /// The operations listener (`OPS_LISTEN`): health, readiness and metrics only.
    public let ops: HTTPServer?
    /// The API keys HTTP callers present, when `API_KEYS_FILE` is set (reloaded on SIGHUP).
    public let apiKeys: APIKeyStore?
    public let shutdownSignal: ShutdownSignal
    /// Resolves once every part has started.
    private let running = ShutdownSignal()
    /// The time every part of the service runs on: its RPC server and clients, its HTTP
    /// servers' deadlines, its logs, and what the service hands it to.
    public let clock: any ServiceClock
    private let started: UInt64
    private let state = Mutex(State())

    private struct State {
        var readiness: [(String, @Sendable () -> Bool)] = []
        var parts: [any LifecycleService] = []
        var hangupActions: [@Sendable () -> Void] = []
        var server: RPCServer?
        var draining = false
    }

    /// Reads the host settings from `environment`. `healthMethod` is the service's own
    /// `…/Health` method name; log lines go to `logSink`. Throws `ConfigError` naming a bad variable.
    public init(
        name: String, version: String = ServiceHost.defaultVersion, healthMethod: String, defaultRPC: String,
        defaultHTTP: String, environment: EnvironmentReader = EnvironmentReader(), signal: ShutdownSignal,
        logSink: LogSink = .standardError, clock: any ServiceClock = SystemClock()
    ) throws(ConfigError) {
        self.name = name
        self.version = version
        var settings = try HostSettings(environment: environment, defaultRPC: defaultRPC, defaultHTTP: defaultHTTP)
        // A clock file, where one is set, stands in for the machine's clock.
        let clock: any ServiceClock = settings.clock ?? clock
        self.clock = clock
        started = clock.nanoseconds()
        settings.server.clock = clock
        self.settings = settings
        logger = Logger(
            service: name, minimumLevel: Logger.Level(name: settings.logLevel) ?? .info, sink: logSink, clock: clock)
        // With TLS the HTTP listener is HTTPS with the same certificate, and a client may show
        // one signed by the same CA (its names are then its identity, as on the RPC listener).
        var httpTLS: HTTPServerTLS?
        if settings.httpTLS, let tls = settings.server.tls, let certificate = tls.certificatePath,
            let key = tls.keyPath
        {
            do throws(HTTPServerError) {
                httpTLS = try HTTPServerTLS(keyPath: key, certificatePath: certificate, trustPath: tls.caPath)
            } catch {
                throw ConfigError(variable: "TLS_CERT", problem: error.message)
            }
        }
        http = HTTPServer(
            host: settings.httpListen.host, port: settings.httpListen.port, limits: settings.http, tls: httpTLS,
            logger: logger)
        if let listen = settings.opsListen {
            // Probes and scrapes only: small requests, a few connections, one thread.
            let limits = HTTPLimits(
                maxBodyBytes: 1024, maxConnections: 64, headerTimeout: .seconds(5), requestTimeout: .seconds(5),
                threads: 1)
            ops = HTTPServer(host: listen.host, port: listen.port, limits: limits, role: "ops", logger: logger)
        } else {
            ops = nil
        }
        do throws(APIKeyStore.FileError) {
            apiKeys = try settings.apiKeysFile.map { path throws(APIKeyStore.FileError) in try APIKeyStore(path: path) }
        } catch {
            throw ConfigError(variable: "API_KEYS_FILE", problem: error.description)
        }
        shutdownSignal = signal
        if let apiKeys {
            onHangup { [logger] in
                do throws(APIKeyStore.FileError) {
                    logger.info("api keys reloaded", ["keys": "\(try apiKeys.reload())"])
                } catch {
                    logger.error("api keys reload refused; the keys in force stay", ["error": error.description])
                }
            }
        }
        router.inline(
            healthMethod, limits: RPCMethodLimits(maxRequestBytes: 1024),
            byRole: { [self] (_: HealthRequest, readOnly) in health(callerReadOnly: readOnly) })
        let build = [
            "service": name, "version": environment.raw("BUILD_VERSION") ?? version,
            "commit": environment.raw("BUILD_COMMIT") ?? "unknown",
        ]
        metrics.addCollector { [weak self] text in
            text.family(
                "build_info", type: "gauge", help: "Always 1; the labels name the build (BUILD_VERSION, BUILD_COMMIT).")
            text.sample("build_info", build, 1)
            text.family("service_ready", type: "gauge", help: "1 when /readyz answers ready, else 0.")
            text.sample("service_ready", [:], self?.notReady().isEmpty == true ? 1 : 0)
        }
    }

    /// The clock's wall time as a date, for parts that take one.
    public var date: @Sendable () -> Date {
        { [clock] in Date(timeIntervalSince1970: Double(clock.epochMilliseconds()) / 1000) }
    }

    /// The machine's wall time as a date, for what another party checks against its own clock
    /// (the tokens the service signs to call a store).
    public var machineDate: @Sendable () -> Date {
        { [clock] in Date(timeIntervalSince1970: Double(clock.machineEpochMilliseconds()) / 1000) }
    }

    /// The release this build reports.
    public static let defaultVersion = "0.1.0"

    /// Adds a check `/readyz` runs; the service is ready when every check passes.
    public func addReadinessCheck(_ name: String, _ check: @escaping @Sendable () -> Bool) {
        state.withLock { $0.readiness.append((name, check)) }
    }

    /// Runs `action` on every SIGHUP from when the service starts, after the actions added before it.
    public func onHangup(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.hangupActions.append(action) }
    }

    /// Adds a part started after the servers and stopped before them.
    public func add(_ part: any LifecycleService) {
        state.withLock { $0.parts.append(part) }
    }

    /// The names of the parts added, in order.
    public var partNames: [String] { state.withLock { $0.parts.map(\.name) } }

    /// Returns once the servers and every part have started.
    public func waitUntilRunning() async { _ = await running.wait() }

    /// A transport that calls this service's methods in this process, as a call over its RPC
    /// listener would be admitted and timed (`caller` is held to the access policy as the HTTP
    /// gateway's callers are). Nothing listens: for tests of the logic behind a service.
    public func inProcessTransport(caller: RPCCaller = RPCCaller(identities: nil, peer: "in-process"))
        throws(RPCError) -> InProcessTransport
    {
        InProcessTransport(
            server: try RPCServer(configuration: settings.server, router: router, logger: logger), caller: caller)
    }

    /// The RPC port, once running.
    public var rpcPort: Int { state.withLock { $0.server?.port ?? 0 } }

    /// The RPC calls whose handlers run now, framed or over HTTP.
    public var rpcCallsInFlight: Int { state.withLock { $0.server?.callsInFlight ?? 0 } }

    /// Starts everything, serves until SIGTERM/SIGINT, then drains: the RPC server stops
    /// accepting and finishes calls in flight within `SHUTDOWN_GRACE`, the parts stop, HTTP stops.
    public func run() async throws {
        let server = try RPCServer(configuration: settings.server, router: router, logger: logger)
        state.withLock { $0.server = server }
        metrics.addCollector { text in server.writeMetrics(into: &text) }
        metrics.addCollector { [http] text in http.writeMetrics(into: &text) }
        installHTTPRoutes(on: http)
        if let ops { installHTTPRoutes(on: ops) }
        // Every unary method over HTTP too (Connect), for callers that do not speak the framing.
        // A verified client certificate names the caller; then an API key; without keys, callers
        // are let in from this machine only, so that a listener open to the stores (the
        // verifier's) does not open the methods too.
        let apiKeys = self.apiKeys
        let identify: @Sendable (HTTPRequest) -> Result<[String]?, RPCError> = { request in
            switch request.clientCertificate {
            case .verified(let der): return .success(PeerIdentity.names(ofDER: der))
            case .refused:
                return .failure(
                    RPCError(.unauthenticated, "the client certificate does not chain to TLS_CA or is not valid now"))
            case .none: break
            }
            if let apiKeys { return apiKeys.identify(request) }
            return Self.isLoopback(request.clientAddress)
                ? .success(nil)
                : .failure(
                    RPCError(.unauthenticated, "calls over HTTP from another host need an API key (API_KEYS_FILE)"))
        }
        ConnectGateway(server: server, maxBodyBytes: settings.http.maxBodyBytes, identify: identify).install(on: http)
        let rpcPart = RPCServerPart(server: server)
        let httpPart = HTTPServerPart(server: http, name: "http")
        let (parts, hangupActions) = state.withLock { ($0.parts, $0.hangupActions) }
        // The reloader starts first: a SIGHUP sent once a listener answers must find it (its
        // default action would end the process), however long the parts after them take to start.
        let group = ServiceGroup(
            services: (hangupActions.isEmpty ? [] : [HangupReloader(actions: hangupActions)])
                + (ops.map { [HTTPServerPart(server: $0, name: "ops")] } ?? []) + [httpPart, rpcPart] + parts,
            signal: shutdownSignal,
            log: { [logger] message, fields in logger.info(message, fields) },
            onStarted: { [running] in running.trigger("running") })
        logger.info("starting", ["version": version])
        try await group.run()
        logger.info("stopped")
    }

    /// Whether `address` (an IP literal as the HTTP server gives it, IPv4-mapped ones as IPv4)
    /// is this machine's.
    static func isLoopback(_ address: String) -> Bool { address.hasPrefix("127.") || address == "::1" }

    private func health(callerReadOnly: Bool) -> HealthResponse {
        let draining = shutdownSignal.isTriggered
        let connections = state.withLock { $0.server?.connectionCount ?? 0 }
        return HealthResponse(
            status: draining ? .draining : .serving, service: name, version: version,
            uptimeMilliseconds: Int64((clock.nanoseconds() - started) / 1_000_000),
            serverTimeMilliseconds: clock.epochMilliseconds(),
            connections: UInt32(clamping: connections), callerReadOnly: callerReadOnly)
    }

    private func installHTTPRoutes(on http: HTTPServer) {
        http.route("GET", "/healthz") { [name] _ in .text("ok \(name)\n") }
        http.route("GET", "/readyz") { [self] _ in
            let failing = notReady()
            if failing.isEmpty { return .text("ready\n") }
            return .text("not ready: \(failing.joined(separator: ", "))\n", status: 503)
        }
        http.route("GET", "/metrics") { [metrics] _ in
            .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }

    /// Names of the readiness checks that fail now.
    public func notReady() -> [String] {
        if shutdownSignal.isTriggered { return ["shutting down"] }
        let checks = state.withLock { $0.readiness }
        return checks.filter { !$0.1() }.map(\.0)
    }
}

/// The RPC server as a lifecycle part.
struct RPCServerPart: LifecycleService {
    let server: RPCServer
    var name: String { "rpc" }
    func start() async throws { try server.start() }
    func shutdown() async { await server.shutdown() }
}

/// The HTTP server as a lifecycle part.
struct HTTPServerPart: LifecycleService {
    let server: HTTPServer
    let name: String
    func start() async throws { try server.start() }
    func shutdown() async { server.stop() }
}

extension ServiceHost {
    /// A client for the ledger at `LEDGER_ADDR` (comma-separated for several instances), with
    /// this service's TLS settings, or `transport` when given (a ledger in this process), and a
    /// probe of its health that `/readyz` waits for. Throws `ConfigError` for a bad `LEDGER_ADDR`.
    public func ledgerDependency(environment: EnvironmentReader, transport: (any ClientTransport)? = nil)
        throws(ConfigError) -> any ClientTransport
    {
        let client: any ClientTransport
        if let transport {
            client = transport
        } else {
            let endpoints = try environment.addresses("LEDGER_ADDR", default: "127.0.0.1:7002")
            do {
                var configuration = RPCClientConfiguration(tls: settings.clientTLS)
                configuration.clock = clock
                client = try RPCClient(endpoints: endpoints, configuration: configuration, logger: logger)
            } catch {
                throw ConfigError(variable: "TLS_CERT", problem: error.message)
            }
        }
        let probe = DependencyProbe(
            name: "ledger", client: client, healthMethod: LedgerRPC.health.name, logger: logger)
        add(probe)
        addReadinessCheck("ledger") { probe.isHealthy }
        return client
    }
}
