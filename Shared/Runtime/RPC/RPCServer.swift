import CShims
import Dispatch
import Foundation
import Glibc
public import Observability
import Sockets
import Synchronization
public import Wire

/// State every connection of a server shares.
final class ServerCore: @unchecked Sendable {  // immutable after init except atomics and loop-confined tables
    let configuration: RPCServerConfiguration
    let router: RPCRouter
    let metrics: RPCServerMetrics
    let logger: Logger?
    let tls: TLSContext?
    let readTimeout: UInt64
    let idleTimeout: UInt64
    let defaultTimeout: UInt64
    let maxTimeout: UInt64
    let firstFrameTimeout: UInt64
    /// Frames longer than this are admitted by their first bytes.
    let smallestRequestLimit: Int
    let registry: ConnectionRegistry
    let clock: any ServiceClock
    private let draining = Atomic<Bool>(false)
    private let inFlight = Atomic<Int>(0)
    /// Connections per loop, each table touched only on its loop's thread.
    let connections: [LoopConnections]

    init(configuration: RPCServerConfiguration, router: RPCRouter, loopCount: Int, logger: Logger?) throws(RPCError) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        clock = configuration.clock
        metrics = RPCServerMetrics(methodNames: router.methodNames, loopCount: loopCount)
        tls = try configuration.tls.map { config throws(RPCError) in try TLSContext(config, role: .server) }
        readTimeout = configuration.readTimeout.nanosecondsClamped
        idleTimeout = configuration.idleTimeout.nanosecondsClamped
        defaultTimeout = configuration.defaultTimeout.nanosecondsClamped
        maxTimeout = configuration.maxTimeout.nanosecondsClamped
        firstFrameTimeout = configuration.firstFrameTimeout.nanosecondsClamped
        registry = ConnectionRegistry(
            maxConnections: configuration.maxConnections, maxPerAddress: configuration.maxConnectionsPerAddress)
        let limits = router.entries.map { $0.limits.maxRequestBytes ?? configuration.maxFrameLength }
        // Frames up to 64 KiB are read whole and refused call by call; a longer one is judged
        // by its first bytes, before the rest is stored.
        smallestRequestLimit = min(max(64 * 1024, limits.min() ?? 0), configuration.maxFrameLength)
        connections = (0..<loopCount).map { _ in LoopConnections() }
    }

    /// The longest request frame `entry`'s method accepts.
    func requestLimit(of entry: RPCRouter.Entry) -> Int {
        min(entry.limits.maxRequestBytes ?? configuration.maxFrameLength, configuration.maxFrameLength)
    }

    var isDraining: Bool { draining.load(ordering: .relaxed) }
    func startDraining() { draining.store(true, ordering: .relaxed) }
    var callsInFlight: Int { inFlight.load(ordering: .relaxed) }
    func callStarted() { inFlight.add(1, ordering: .relaxed) }
    func callFinished() { inFlight.subtract(1, ordering: .relaxed) }

    func connectionClosed(_ connection: ServerConnection, reason: String) {
        connections[connection.loop.index].table[ObjectIdentifier(connection)] = nil
        registry.remove(connection)
        metrics.connections.subtract(1, ordering: .relaxed)
        if reason.hasPrefix("TLS") { metrics.frameRejected(loop: connection.loop.index, reason: "tls") }
        logger?.debug("connection closed", ["peer": connection.peer, "reason": reason])
    }

    // MARK: What every transport's calls are held to (framed connections, the HTTP gateway, in process)

    static let shuttingDown = "the server is shutting down"

    /// Who asks, as the transport that brought the call knows it.
    enum Asker {
        /// A framed connection's peer: the names of its TLS certificate (none on plaintext), and
        /// the one of them with the read-only role, if any (`readOnlyIdentity(of:)`, found once
        /// per connection). The access policy holds it when the server has TLS.
        case peer([String], readOnly: String?)
        /// A caller of another transport (the HTTP gateway, an in-process client): its
        /// identities, or nil when the transport authenticates nobody (refused when the server
        /// has TLS, as a plaintext connection could not reach it).
        case caller([String]?)
    }

    /// Why a call is refused, with the method's index when the method was found (for metrics).
    struct Refusal: Error {
        let methodIndex: Int?
        let error: RPCError
    }

    /// An admitted call: its method's index, and whether the caller has the read-only role (its
    /// call runs the method's `readOnlyHandler`).
    struct Admitted {
        let index: Int
        let readOnly: Bool

        /// The handler the call runs.
        func handler(in router: RPCRouter) -> RPCHandler { router.entries[index].handler(readOnly: readOnly) }
    }

    /// The one admission every call goes through, whatever brought it: refused while the server
    /// (or the connection, `draining`) drains; then the access rule, which comes before the
    /// method is looked up (a caller learns nothing of the methods it may not call, not even
    /// whether they exist); then the method; then its request limit (`bytes`: the frame's length,
    /// or the payload's for a transport without frames); then, for a caller with the read-only
    /// role, whether the method changes nothing. Returns the method's index and the caller's role.
    func admit(
        _ found: Int?, name: @autoclosure () -> String, asker: Asker, bytes: Int, draining: Bool = false
    ) -> Result<Admitted, Refusal> {
        if draining || isDraining {
            return .failure(Refusal(methodIndex: nil, error: RPCError(.unavailable, Self.shuttingDown)))
        }
        // The name is read only for a refusal or a policy to check: an admitted call on a
        // plaintext connection builds no string.
        func method() -> String { found.map { router.entries[$0].name } ?? String(name().prefix(200)) }
        var readOnly: String?
        switch asker {
        case .peer(let identities, let role):
            if tls != nil, let refusal = refusal(method: method(), identities: identities) {
                return .failure(Refusal(methodIndex: found, error: RPCError(.permissionDenied, refusal)))
            }
            readOnly = role
        case .caller(let identities?):
            guard !identities.isEmpty else {
                return .failure(
                    Refusal(methodIndex: found, error: RPCError(.unauthenticated, "the caller has no identity")))
            }
            if let refusal = refusal(method: method(), identities: identities) {
                return .failure(Refusal(methodIndex: found, error: RPCError(.permissionDenied, refusal)))
            }
            readOnly = readOnlyIdentity(of: identities)
        case .caller(nil):
            if tls != nil {
                return .failure(
                    Refusal(
                        methodIndex: found,
                        error: RPCError(.unauthenticated, "this server requires a client certificate or an API key")))
            }
        }
        guard let index = found else {
            return .failure(Refusal(methodIndex: nil, error: RPCError(.unimplemented, Self.unknownMethod(method()))))
        }
        if let readOnly, router.entries[index].readOnlyHandler == nil {
            return .failure(
                Refusal(
                    methodIndex: index,
                    error: RPCError(
                        .permissionDenied,
                        "\(readOnly) has the read-only role (RPC_READ_ONLY) and may not call \(router.entries[index].name)"
                    )))
        }
        if let tooLarge = oversized(bytes, for: router.entries[index]) {
            return .failure(Refusal(methodIndex: index, error: RPCError(.resourceExhausted, tooLarge)))
        }
        return .success(Admitted(index: index, readOnly: readOnly != nil))
    }

    /// The first of `identities` with the read-only role (`RPC_READ_ONLY`); nil when none has it.
    func readOnlyIdentity(of identities: [String]) -> String? {
        let listed = configuration.readOnlyIdentities
        return listed.isEmpty ? nil : identities.first(where: listed.contains)
    }

    /// Why `identities` may not call `method` under the access policy; nil when they may.
    func refusal(method: String, identities: [String]) -> String? {
        configuration.accessPolicy.allows(method: method, identities: identities)
            ? nil : "\(identities.first ?? "a peer without identity") may not call \(method)"
    }

    /// Why a request of `bytes` bytes for `entry` is too large; nil within its limit.
    func oversized(_ bytes: Int, for entry: RPCRouter.Entry) -> String? {
        let limit = requestLimit(of: entry)
        return bytes <= limit
            ? nil : "a request of \(bytes) bytes for \(entry.name) exceeds its limit of \(limit) bytes"
    }

    static func unknownMethod(_ name: String) -> String { "unknown method \"\(name.prefix(200))\"" }

    /// The time a call that asked for `timeoutMilliseconds` (0: none) is given, in nanoseconds:
    /// the server's default for none, at most its maximum.
    func callTime(timeoutMilliseconds: UInt64) -> UInt64 {
        let (requested, overflow) = timeoutMilliseconds.multipliedReportingOverflow(by: 1_000_000)
        return min(timeoutMilliseconds == 0 ? defaultTimeout : overflow ? .max : requested, maxTimeout)
    }

    static func deadlineExceeded(_ callTime: UInt64) -> String { "deadline of \(callTime / 1_000_000) ms exceeded" }

    /// Runs a unary handler as a call's task would: the deadline and the trace are the task's
    /// (for the calls it makes and the lines it logs), and what it throws is mapped to a status.
    func runUnary(
        _ handler: @Sendable (RPCRequestContext, [UInt8]) async throws -> [UInt8], _ context: RPCRequestContext,
        _ payload: [UInt8]
    ) async -> Result<[UInt8], RPCError> {
        let result = await TraceContext.$current.withValue(context.trace) {
            do {
                return Result<[UInt8], RPCError>.success(
                    try await RPCRequestContext.$currentDeadline.withValue(context.deadline) {
                        try await handler(context, payload)
                    })
            } catch {
                return .failure(rpcError(from: error, method: context.method))
            }
        }
        logCall(context, result.map { _ in () })
        return result
    }

    /// Logs a call that ran a handler at debug level, with its trace id: `rpc call` with the
    /// method, the status and the caller (an inline call, which only reads memory, is left out).
    func logCall(_ context: RPCRequestContext, _ result: Result<Void, RPCError>) {
        guard let logger, logger.minimumLevel <= .debug else { return }
        let code =
            switch result {
            case .success: StatusCode.ok.name
            case .failure(let error): error.code.name
            }
        logger.debug(
            "rpc call",
            ["method": context.method, "code": code, "peer": context.peer, Logger.traceIDField: context.trace.traceID])
    }

    /// Maps what a handler threw to the status a caller sees. Errors that are not `RPCError`
    /// are logged and reported as INTERNAL without their text, which may hold internals.
    func rpcError(from error: any Error, method: String) -> RPCError {
        if let error = error as? RPCError { return error }
        if let error = error as? any RPCErrorConvertible { return error.rpcError }
        if error is CancellationError { return RPCError(.cancelled, "the call was cancelled") }
        // Logged under the trace of the call that failed, wherever it is mapped.
        logger?.error("handler failed", ["method": method, "error": "\(error)"])
        return RPCError(.internal, "internal error")
    }
}

/// A multiplexing RPC server: non-blocking sockets on a fixed set of event-loop threads,
/// length-prefixed protobuf envelopes, many calls in flight per connection answered in any
/// order, deadlines, limits, optional mutual TLS, and a graceful drain.
public final class RPCServer: Sendable {
    let core: ServerCore

    /// Calls whose handlers run now (a drain, or a caller that went away, waits for them).
    public var callsInFlight: Int { core.callsInFlight }
    private let group: EventLoopGroup
    private let listener: Mutex<(fd: Int32, token: UInt64)?> = Mutex(nil)
    private let boundPort = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Builds a server for `router`'s methods; nothing listens until `start()`.
    /// Throws when the TLS files cannot be loaded.
    public init(configuration: RPCServerConfiguration, router: RPCRouter, logger: Logger? = nil) throws(RPCError) {
        let threads = max(1, configuration.threads)
        core = try ServerCore(configuration: configuration, router: router, loopCount: threads, logger: logger)
        group = EventLoopGroup(count: threads, name: "rpc", clock: configuration.clock)
        // A peer that vanishes must cost an error code, not the process (OpenSSL writes with write(2)).
        signal(SIGPIPE, SIG_IGN)
    }

    deinit {
        // A server dropped without shutdown() still releases its socket and threads.
        if !stopped.load(ordering: .acquiring) {
            if let (fd, _) = listener.withLock({ $0 }) { close(fd) }
            group.shutdown()
        }
    }

    /// Whether the server has begun to drain (`shutdown()`): new calls are refused from then on.
    public var isDraining: Bool { core.isDraining }

    /// The port the server listens on (after `start()`).
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// Binds and starts accepting. Throws when the address cannot be resolved or bound.
    public func start() throws(RPCError) {
        let configuration = core.configuration
        let fd: Int32
        do throws(RPCError) {
            guard
                let address = try SocketAddress.resolveForRPC(host: configuration.host, port: configuration.port).first
            else {
                throw RPCError(.unavailable, "\(configuration.host) has no address")
            }
            fd = try Socket.listen(on: address)
        } catch {
            stopped.store(true, ordering: .releasing)
            group.shutdown()
            throw error
        }
        boundPort.store(Socket.localAddress(fd)?.port ?? configuration.port, ordering: .relaxed)
        let acceptLoop = group.loops[0]
        let registered = DispatchSemaphore(value: 0)
        acceptLoop.execute {
            let acceptor = Acceptor(fd: fd, server: self, loop: acceptLoop)
            let token = acceptLoop.register(fd: fd, events: EPOLLIN.rawValue, handler: acceptor)
            acceptor.token = token
            self.listener.withLock { $0 = (fd, token) }
            registered.signal()
        }
        registered.wait()
        for loop in group.loops { scheduleSweep(on: loop) }
        core.logger?.info(
            "rpc server listening",
            ["address": "\(configuration.host):\(port)", "tls": core.tls == nil ? "off" : "mutual"])
    }

    /// Writes the server's metric families (calls, latency, connections, rejected frames).
    public func writeMetrics(into text: inout MetricsText) { core.metrics.write(into: &text) }

    /// Open connections.
    public var connectionCount: Int { core.metrics.connections.load(ordering: .relaxed) }

    /// Stops accepting, lets calls in flight finish within the grace period, then closes every
    /// connection and stops the threads. Idempotent.
    public func shutdown() async {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        core.startDraining()
        let acceptLoop = group.loops[0]
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            acceptLoop.execute {
                if let (fd, token) = self.listener.withLock({ $0 }) {
                    acceptLoop.deregister(fd: fd, token: token)
                    close(fd)
                }
                done.resume()
            }
        }
        for loop in group.loops {
            loop.execute { [core] in
                for connection in core.connections[loop.index].table.values { connection.beginDrain() }
            }
        }
        let graceEnds = core.clock.nanoseconds().saturatingAdd(
            core.configuration.shutdownGracePeriod.nanosecondsClamped)
        while core.callsInFlight > 0 && core.clock.nanoseconds() < graceEnds {
            try? await core.clock.sleep(for: .milliseconds(5))
        }
        if core.callsInFlight > 0 {
            core.logger?.warning("grace period over; cancelling calls in flight", ["calls": "\(core.callsInFlight)"])
        }
        for loop in group.loops {
            loop.execute { [core] in
                for connection in core.connections[loop.index].table.values {
                    connection.channel.closeAfterFlush("server stopped")
                }
            }
        }
        group.shutdown()
        core.logger?.info("rpc server stopped")
    }

    // MARK: Accepting

    fileprivate func accept(on fd: Int32, token: UInt64, loop: EventLoop) {
        while true {
            let client = Glibc.accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    // The pending connection stays queued and the socket stays readable: stop
                    // watching it for a while instead of spinning, and say so once per pause.
                    core.logger?.error("accept paused for 100 ms: \(Socket.errorText())")
                    loop.modify(fd: fd, token: token, events: 0)
                    loop.schedule(at: core.clock.nanoseconds() + 100_000_000) { [weak self] in
                        guard let self, !self.core.isDraining else { return }
                        loop.modify(fd: fd, token: token, events: EPOLLIN.rawValue)
                    }
                }
                return
            }
            if core.isDraining {
                core.metrics.connectionsRefused.add(1, ordering: .relaxed)
                close(client)
                continue
            }
            let peerAddress = Socket.peerAddress(client)
            let address = peerAddress?.host ?? "unknown"
            let admission = core.registry.admission(from: address)
            if case .refused(let reason) = admission {
                core.metrics.connectionsRefused.add(1, ordering: .relaxed)
                core.logger?.debug("connection refused", ["peer": address, "reason": reason])
                close(client)
                continue
            }
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            core.metrics.connections.add(1, ordering: .relaxed)
            core.metrics.connectionsAccepted.add(1, ordering: .relaxed)
            Socket.setNoDelay(client)
            let loop = group.next()
            let peer = peerAddress?.description ?? "unknown"
            let session: TLSSession?
            do {
                session = try core.tls?.makeSession(fd: client, host: nil)
            } catch {
                core.logger?.error("cannot start TLS", ["error": "\(error)"])
                close(client)
                core.metrics.connections.subtract(1, ordering: .relaxed)
                if case .admittedEvicting(let victim) = admission { core.registry.spared(victim) }
                continue
            }
            // Registered here, on the accepting thread, so the next accept counts it.
            let connection = ServerConnection(
                core: core, loop: loop, fd: client, tls: session, peer: peer, address: address)
            core.registry.add(connection)
            if case .admittedEvicting(let victim) = admission {
                victim.loop.execute { victim.evict() }
            }
            loop.execute { [core] in
                core.connections[loop.index].table[ObjectIdentifier(connection)] = connection
                connection.channel.start()
            }
        }
    }

    private func scheduleSweep(on loop: EventLoop) {
        let interval = max(5_000_000, min(core.readTimeout, core.idleTimeout, core.firstFrameTimeout) / 4)
        loop.execute { [core] in
            func tick() {
                let now = core.clock.nanoseconds()
                for connection in core.connections[loop.index].table.values { connection.sweep(now: now) }
                loop.schedule(at: now + min(interval, 1_000_000_000), tick)
            }
            tick()
        }
    }
}

/// Accepts connections on the listening socket.
private final class Acceptor: EventLoopHandler {
    let fd: Int32
    let loop: EventLoop
    var token: UInt64 = 0
    weak var server: RPCServer?

    init(fd: Int32, server: RPCServer, loop: EventLoop) {
        self.fd = fd
        self.server = server
        self.loop = loop
    }

    func handle(events: UInt32) { server?.accept(on: fd, token: token, loop: loop) }
}

/// The connections of one event loop.
final class LoopConnections: @unchecked Sendable {  // touched only on its loop's thread
    var table: [ObjectIdentifier: ServerConnection] = [:]
}
