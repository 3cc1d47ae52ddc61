import Dispatch
import Synchronization
public import Wire

/// Who makes a call that arrives by another transport than the framed protocol (the Connect
/// gateway on the HTTP listener).
public struct RPCCaller: Sendable {
    /// The caller's names: those of its TLS certificate, or the identity its API key stands
    /// for. Nil when the transport authenticates nobody (plaintext HTTP without API keys).
    public var identities: [String]?
    /// The caller's address, for logs.
    public var peer: String

    public init(identities: [String]?, peer: String) {
        self.identities = identities
        self.peer = peer
    }
}

extension RPCServer {
    /// The unary methods this server offers, in registration order (server streams are left
    /// out: they need the framed protocol's flow control).
    public var unaryMethodNames: [String] {
        core.router.entries.compactMap { entry in
            if case .serverStream = entry.handler { return nil }
            return entry.name
        }
    }

    /// Runs unary method `method` with the serialized request `payload` as a call of the framed
    /// protocol would run: refused while the server drains, held to the access policy, to the
    /// method's request limit and to the deadline (`timeoutMilliseconds`, or the server's default
    /// for 0, capped at its maximum), counted in the same metrics, and answered with the same statuses. Blocks
    /// the calling thread until the answer, so it is for threads that may block (the HTTP
    /// server's), never for the cooperative pool.
    ///
    /// A caller with identities is held to the access policy (PERMISSION_DENIED when it does
    /// not allow the method), one whose transport authenticated it as nobody is UNAUTHENTICATED.
    /// A caller whose transport authenticates nobody may call every method unless the server
    /// has TLS configured (then it is UNAUTHENTICATED), as on a plaintext connection.
    public func callBlocking(_ method: String, payload: [UInt8], timeoutMilliseconds: UInt64, caller: RPCCaller)
        -> Result<[UInt8], RPCError>
    {
        let core = self.core
        let started = MonotonicClock.nanoseconds()
        let index = core.router.entries.firstIndex { $0.name == method }
        let result = core.callBlocking(index, method, payload, timeoutMilliseconds, caller, started: started)
        let code: StatusCode =
            switch result {
            case .success: .ok
            case .failure(let error): error.code
            }
        core.metrics.record(
            loop: 0, method: index ?? core.metrics.unknownMethodIndex, code: code,
            nanoseconds: MonotonicClock.nanoseconds() - started)
        return result
    }
}

extension ServerCore {
    fileprivate func callBlocking(
        _ index: Int?, _ method: String, _ payload: [UInt8], _ timeoutMilliseconds: UInt64, _ caller: RPCCaller,
        started: UInt64
    ) -> Result<[UInt8], RPCError> {
        if isDraining { return .failure(RPCError(.unavailable, Self.shuttingDown)) }
        // As on a connection, the access rule comes before the method is looked up.
        if let identities = caller.identities {
            guard !identities.isEmpty else { return .failure(RPCError(.unauthenticated, "the caller has no identity")) }
            if let refusal = refusal(method: method, identities: identities) {
                return .failure(RPCError(.permissionDenied, refusal))
            }
        } else if tls != nil {
            return .failure(RPCError(.unauthenticated, "this server requires a client certificate or an API key"))
        }
        guard let index else { return .failure(RPCError(.unimplemented, Self.unknownMethod(method))) }
        let entry = router.entries[index]
        if let tooLarge = oversized(payload.count, for: entry) {
            return .failure(RPCError(.resourceExhausted, tooLarge))
        }
        let budget = callTime(timeoutMilliseconds: timeoutMilliseconds)
        let deadline = started.saturatingAdd(budget)
        let context = RPCRequestContext(
            method: method, deadline: deadline, peerIdentities: caller.identities ?? [], peer: caller.peer)
        let answer = BlockingAnswer()
        var task: Task<Void, Never>?
        callStarted()
        defer { callFinished() }
        switch entry.handler {
        case .inline(let handler):
            var output: [UInt8] = []
            do {
                try payload.withUnsafeBytes { try handler($0, &output) }
                return .success(output)
            } catch {
                return .failure(rpcError(from: error, method: method))
            }
        case .unary(let handler):
            task = Task { answer.set(await self.runUnary(handler, context, payload)) }
        case .deferred(let handler):
            payload.withUnsafeBytes { bytes in
                handler(
                    context, bytes,
                    RPCResponder { [self] in answer.set($0.mapError { rpcError(from: $0, method: method) }) })
            }
        case .serverStream:
            return .failure(
                RPCError(.unimplemented, "\(method) is a server stream: call it over the RPC protocol"))
        }
        guard let result = answer.wait(until: deadline) else {
            task?.cancel()
            return .failure(RPCError(.deadlineExceeded, Self.deadlineExceeded(budget)))
        }
        return result
    }
}

/// The one answer a blocked caller waits for: the first `set` counts.
private final class BlockingAnswer: Sendable {
    private let result = Mutex<Result<[UInt8], RPCError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func set(_ value: Result<[UInt8], RPCError>) {
        let first = result.withLock { stored in
            guard case .none = stored else { return false }
            stored = value
            return true
        }
        if first { done.signal() }
    }

    /// The answer, or nil when monotonic time `deadline` passed first.
    func wait(until deadline: UInt64) -> Result<[UInt8], RPCError>? {
        let now = MonotonicClock.nanoseconds()
        let left = deadline > now ? deadline - now : 0
        guard done.wait(timeout: .now() + .nanoseconds(Int(clamping: left))) == .success else { return nil }
        return result.withLock { $0 }
    }
}
