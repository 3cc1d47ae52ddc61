import Config
import Dispatch
import Glibc
public import Observability
public import Sockets
import Synchronization
public import Wire

/// A client for one service that may run as several instances: it keeps one multiplexed
/// connection per address (a name that resolves to several addresses counts as several),
/// spreads calls over the ready ones round-robin, reconnects with jittered backoff, and fails
/// fast with every address's last error when none can be reached.
public final class RPCClient: Sendable {
    private let core: ClientCore
    private let loop: EventLoop
    private let tokens = Atomic<UInt64>(1)
    private let configuration: RPCClientConfiguration

    /// A client for `endpoints`. Names are resolved now and again whenever all of a name's
    /// addresses have failed. Throws only when the TLS files cannot be loaded.
    public init(
        endpoints: [HostPort], configuration: RPCClientConfiguration, logger: Logger? = nil
    ) throws(RPCError) {
        precondition(!endpoints.isEmpty, "an RPC client needs at least one endpoint")
        self.configuration = configuration
        loop = EventLoop(index: 0, name: "rpc-client", clock: configuration.clock)
        let tls = try configuration.tls.map { config throws(RPCError) in try TLSContext(config, role: .client) }
        core = ClientCore(loop: loop, endpoints: endpoints, configuration: configuration, tls: tls, logger: logger)
    }

    /// Convenience for plaintext or TLS with defaults.
    public convenience init(endpoints: [HostPort], tls: TLSConfiguration? = nil, logger: Logger? = nil) throws(RPCError)
    {
        try self.init(endpoints: endpoints, configuration: RPCClientConfiguration(tls: tls), logger: logger)
    }

    deinit {
        // Calls and streams still open end with UNAVAILABLE before the loop stops.
        let core = self.core
        loop.execute { core.closeAll() }
        loop.stopAndWait()
    }

    /// Calls a unary method with a serialized request and returns the serialized response.
    /// The deadline is the earliest of `timeout`, the deadline of the call being served (inside
    /// a handler) and, when neither is given, the configured default. The request carries
    /// `TraceContext.outgoing()`: the trace of the call being served, or a new one.
    public func unary(_ method: String, request: [UInt8], timeout: Duration? = nil) async throws(RPCError) -> [UInt8] {
        if Task.isCancelled { throw RPCError(.cancelled, "the caller cancelled the call") }
        let deadline = effectiveDeadline(timeout, fallback: configuration.defaultTimeout)
        let token = tokens.add(1, ordering: .relaxed).newValue
        let core = self.core
        let trace = TraceContext.outgoing()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], RPCError>, Never>) in
                loop.execute {
                    core.start(
                        ClientCall(
                            token: token, method: method, trace: trace, request: request, deadline: deadline,
                            window: 0, completion: .unary(continuation)))
                }
            }
        } onCancel: {
            loop.execute { core.cancel(token: token, reason: RPCError(.cancelled, "the caller cancelled the call")) }
        }
        return try result.get()
    }

    /// Calls a unary method with typed messages.
    public func call<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ request: Request, as: Response.Type = Response.self, timeout: Duration? = nil
    ) async throws(RPCError) -> Response {
        let bytes = try await unary(method, request: request.serialized(), timeout: timeout)
        return try Response(serialized: bytes)
    }

    /// Starts a server-streaming call. Without a timeout the stream lasts until the server ends
    /// it, the connection is lost, or the stream is cancelled or dropped. The request carries
    /// `TraceContext.outgoing()`.
    public func serverStream(_ method: String, request: [UInt8], timeout: Duration? = nil) -> RPCResponseStream {
        let deadline =
            timeout == nil && RPCRequestContext.currentDeadline == nil ? nil : effectiveDeadline(timeout, fallback: nil)
        let token = tokens.add(1, ordering: .relaxed).newValue
        let core = self.core
        let loop = self.loop
        let window = min(max(configuration.streamWindow, 1), ServerStreamWriter.maximumCredit)
        let trace = TraceContext.outgoing()
        let state = ResponseStreamState(
            window: window,
            grant: { amount in loop.execute { core.grant(token: token, amount) } },
            cancelCall: {
                loop.execute { core.cancel(token: token, reason: RPCError(.cancelled, "the stream was cancelled")) }
            })
        loop.execute {
            core.start(
                ClientCall(
                    token: token, method: method, trace: trace, request: request, deadline: deadline,
                    window: window, completion: .stream(state)))
        }
        return RPCResponseStream(handle: StreamHandle(state: state))
    }

    /// Closes every connection; calls in flight fail with UNAVAILABLE.
    public func shutdown() {
        let done = DispatchSemaphore(value: 0)
        let core = self.core
        loop.execute {
            core.closeAll()
            done.signal()
        }
        done.wait()
    }

    private func effectiveDeadline(_ timeout: Duration?, fallback: Duration?) -> UInt64? {
        let now = loop.clock.nanoseconds()
        var deadline: UInt64? = (timeout ?? (RPCRequestContext.currentDeadline == nil ? fallback : nil)).map {
            now.saturatingAdd($0.nanosecondsClamped)
        }
        if let inherited = RPCRequestContext.currentDeadline { deadline = min(deadline ?? .max, inherited) }
        return deadline
    }
}

/// The client's state; every method runs on the client's loop thread.
final class ClientCore: @unchecked Sendable {  // confined to its loop thread
    let loop: EventLoop
    private let endpoints: [HostPort]
    private let configuration: RPCClientConfiguration
    private let tls: TLSContext?
    private let logger: Logger?
    /// Addresses per configured endpoint, in configuration order.
    private var slots: [[EndpointSlot]]
    private var resolveErrors: [String?]
    private var ready: [ClientConnection] = []
    private var cursor = 0
    private var waiting: [ClientCall] = []
    private var active: [UInt64: ClientCall] = [:]
    private var closed = false
    /// Calls cancelled before their start reached the loop, and the highest token started.
    private var cancelledBeforeStart: Set<UInt64> = []
    private var highestStarted: UInt64 = 0
    /// Endpoints whose name is being resolved off the loop thread, and when a name that
    /// failed to resolve may be tried again.
    private var resolving: [Bool]
    private var resolveRetryAt: [UInt64]
    private var resolveFailures: [Int]

    init(
        loop: EventLoop, endpoints: [HostPort], configuration: RPCClientConfiguration, tls: TLSContext?, logger: Logger?
    ) {
        self.loop = loop
        self.endpoints = endpoints
        self.configuration = configuration
        self.tls = tls
        self.logger = logger
        slots = Array(repeating: [], count: endpoints.count)
        resolveErrors = Array(repeating: nil, count: endpoints.count)
        resolving = Array(repeating: false, count: endpoints.count)
        resolveRetryAt = Array(repeating: 0, count: endpoints.count)
        resolveFailures = Array(repeating: 0, count: endpoints.count)
    }

    func start(_ call: ClientCall) {
        guard !closed else { return call.finish(.failure(RPCError(.unavailable, "the client is shut down"))) }
        highestStarted = max(highestStarted, call.token)
        if cancelledBeforeStart.remove(call.token) != nil {
            return call.finish(.failure(RPCError(.cancelled, "the caller cancelled the call")))
        }
        // The envelope adds the method name, the traceparent and a few dozen bytes to the request.
        let frameLength = call.request.count + call.method.count + call.traceparent.count + 40
        guard frameLength <= configuration.maxFrameLength else {
            return call.finish(
                .failure(
                    RPCError(
                        .resourceExhausted,
                        "the request of \(call.request.count) bytes does not fit in the maximum frame length of \(configuration.maxFrameLength)"
                    )))
        }
        active[call.token] = call
        if let deadline = call.deadline {
            call.timer = loop.schedule(at: deadline) { [weak self, weak call] in
                guard let self, let call else { return }
                self.cancel(
                    token: call.token,
                    reason: RPCError(.deadlineExceeded, "deadline exceeded calling \(call.methodName)"))
            }
        }
        connectWhereDue()
        if let connection = nextReady() {
            connection.send(call)
        } else if isConnecting {
            waiting.append(call)
        } else {
            fail(call, unreachable())
        }
    }

    func cancel(token: UInt64, reason: RPCError) {
        guard let call = active[token] else {
            if token > highestStarted { cancelledBeforeStart.insert(token) }
            return
        }
        if let connection = call.connection {
            connection.cancel(call)
        } else {
            waiting.removeAll { $0 === call }
        }
        fail(call, reason)
    }

    func grant(token: UInt64, _ amount: UInt32) {
        guard let call = active[token] else { return }
        call.connection?.grant(call, amount)
    }

    /// A call got its final answer on a connection.
    func callEnded(_ call: ClientCall) {
        active[call.token] = nil
        if let timer = call.timer { loop.cancel(timer: timer) }
    }

    private func fail(_ call: ClientCall, _ error: RPCError) {
        callEnded(call)
        call.finish(.failure(error))
    }

    func closeAll() {
        closed = true
        for connection in slots.flatMap({ $0 }).compactMap(\.connection) {
            connection.channel.close("client shut down")
        }
        for call in waiting { fail(call, RPCError(.unavailable, "the client is shut down")) }
        waiting.removeAll()
    }

    // MARK: Connections

    private var isConnecting: Bool {
        resolving.contains(true) || slots.joined().contains { $0.state == .connecting }
    }

    private func nextReady() -> ClientConnection? {
        guard !ready.isEmpty else { return nil }
        cursor = (cursor + 1) % ready.count
        return ready[cursor]
    }

    /// Starts connections to every address that is idle or whose backoff has passed; resolves
    /// names that have no usable address, on another thread (a resolver can be slow).
    private func connectWhereDue() {
        let now = loop.clock.nanoseconds()
        for index in endpoints.indices {
            let unusable = slots[index].allSatisfy { $0.state == .backoff || $0.state == .idle }
            if unusable && !resolving[index] && resolveRetryAt[index] <= now
                && slots[index].allSatisfy({ $0.retryAt <= now })
            {
                resolve(index)
            }
            for slot in slots[index] where slot.state == .idle || (slot.state == .backoff && slot.retryAt <= now) {
                connect(slot)
            }
        }
    }

    private func resolve(_ index: Int) {
        let endpoint = endpoints[index]
        resolving[index] = true
        let loop = self.loop
        let resolver = configuration.resolver
        DispatchQueue.global().async { [weak self] in
            let result = Result { () throws(RPCError) in try resolver(endpoint.host, endpoint.port) }
            loop.execute { [weak self] in self?.resolved(index, result) }
        }
    }

    private func resolved(_ index: Int, _ result: Result<[SocketAddress], RPCError>) {
        resolving[index] = false
        guard !closed else { return }
        let endpoint = endpoints[index]
        switch result {
        case .success(let addresses):
            resolveErrors[index] = addresses.isEmpty ? "\(endpoint): no address" : nil
            resolveFailures[index] = addresses.isEmpty ? resolveFailures[index] + 1 : 0
            let known = Set(slots[index].map(\.address))
            for address in addresses where !known.contains(address) {
                slots[index].append(EndpointSlot(endpoint: endpoint.description, host: endpoint.host, address: address))
            }
            // Addresses the name no longer has are dropped unless in use.
            slots[index].removeAll { slot in
                !addresses.contains(slot.address) && slot.state != .ready && slot.state != .connecting
            }
        case .failure(let error):
            resolveErrors[index] = "\(endpoint): \(error.message)"
            resolveFailures[index] += 1
        }
        if resolveFailures[index] > 0 {
            resolveRetryAt[index] = loop.clock.nanoseconds().saturatingAdd(
                backoff(failures: resolveFailures[index]))
        }
        connectWhereDue()
        failWaitingIfUnreachable()
    }

    private func connect(_ slot: EndpointSlot) {
        slot.state = .connecting
        do throws(RPCError) {
            let fd = try Socket.startConnect(to: slot.address)
            let session: TLSSession?
            do {
                session = try tls?.makeSession(fd: fd, host: slot.host)
            } catch {
                close(fd)
                throw error
            }
            let connection = ClientConnection(
                core: self, slot: slot, fd: fd, tls: session, maxFrameLength: configuration.maxFrameLength,
                connectTimeout: configuration.connectTimeout.nanosecondsClamped)
            slot.connection = connection
            connection.channel.start()
        } catch {
            slotFailed(slot, reason: error.message)
        }
    }

    func connectionReady(_ connection: ClientConnection) {
        let slot = connection.slot
        slot.state = .ready
        slot.failures = 0
        slot.lastError = ""
        ready.append(connection)
        let queued = waiting
        waiting.removeAll()
        for call in queued { nextReady()!.send(call) }
    }

    func connectionClosed(_ connection: ClientConnection, reason: String, wasReady: Bool, answered: Bool) {
        ready.removeAll { $0 === connection }
        let slot = connection.slot
        slot.connection = nil
        if closed { return }
        // A connection that never answered anything counts as a failed attempt: a server that
        // rejects the client's certificate after the TLS 1.3 handshake looks like this.
        if wasReady && answered {
            // A connection that worked and dropped is retried at once on the next call.
            slot.state = .idle
            slot.lastError = reason
            logger?.warning("rpc connection lost", ["endpoint": slot.label, "reason": reason])
        } else {
            slotFailed(slot, reason: reason)
        }
    }

    private func slotFailed(_ slot: EndpointSlot, reason: String) {
        slot.connection = nil
        slot.failures += 1
        slot.lastError = reason
        slot.state = .backoff
        slot.retryAt = loop.clock.nanoseconds().saturatingAdd(backoff(failures: slot.failures))
        failWaitingIfUnreachable()
    }

    /// The jittered delay after `failures` failed attempts: doubling from the initial backoff
    /// up to the maximum, drawn uniformly from the upper half.
    private func backoff(failures: Int) -> UInt64 {
        let base = configuration.initialBackoff.nanosecondsClamped
        let cap = configuration.maxBackoff.nanosecondsClamped
        let exponent = UInt64(min(max(failures - 1, 0), 30))
        let (scaled, overflow) = base.multipliedReportingOverflow(by: 1 << exponent)
        let delay = overflow ? cap : min(cap, scaled)
        return delay / 2 + UInt64.random(in: 0...(delay / 2))
    }

    /// Fails the queued calls when no address is ready and none is being tried.
    private func failWaitingIfUnreachable() {
        guard !isConnecting && ready.isEmpty && !waiting.isEmpty else { return }
        let error = unreachable()
        let queued = waiting
        waiting.removeAll()
        for call in queued { fail(call, error) }
    }

    /// UNAVAILABLE naming every endpoint and why it cannot be reached.
    private func unreachable() -> RPCError {
        var reasons: [String] = []
        let now = loop.clock.nanoseconds()
        for index in endpoints.indices {
            if slots[index].isEmpty {
                reasons.append(resolveErrors[index] ?? "\(endpoints[index]): not resolved")
            }
            for slot in slots[index] {
                var text = "\(slot.label): \(slot.lastError.isEmpty ? "not connected" : slot.lastError)"
                if slot.state == .backoff && slot.retryAt > now {
                    text += " (next attempt in \((slot.retryAt - now) / 1_000_000) ms)"
                }
                reasons.append(text)
            }
        }
        return RPCError(.unavailable, "no endpoint reachable: " + reasons.joined(separator: "; "))
    }
}
