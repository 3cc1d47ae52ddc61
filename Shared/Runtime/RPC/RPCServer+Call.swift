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
    ///
    /// The call runs under `TraceContext.current` (the HTTP server binds the request's), or a
    /// new trace when there is none.
    public func callBlocking(_ method: String, payload: [UInt8], timeoutMilliseconds: UInt64, caller: RPCCaller)
        -> Result<[UInt8], RPCError>
    {
        let core = self.core
        let started = core.clock.nanoseconds()
        let index = core.router.index(named: method)
        let result = core.callBlocking(
            index, method, payload, timeoutMilliseconds, caller, TraceContext.current ?? .start(), started: started)
        core.recordCall(index, result, started: started)
        return result
    }
}

extension ServerCore {
    /// Counts a call that came by another transport than a connection, in the metrics a
    /// framed call is counted in (loop 0's).
    func recordCall(_ index: Int?, _ result: Result<[UInt8], RPCError>, started: UInt64) {
        let code: StatusCode =
            switch result {
            case .success: .ok
            case .failure(let error): error.code
            }
        metrics.record(
            loop: 0, method: index ?? metrics.unknownMethodIndex, code: code,
            nanoseconds: clock.nanoseconds() - started)
    }

    /// A unary call admitted and started by `begin`: answered at once, or to be waited for
    /// until its deadline.
    enum Begun {
        case answered(Result<[UInt8], RPCError>)
        case running(CallAnswer, deadline: UInt64, budget: UInt64, task: Task<Void, Never>?)
    }

    /// Admits unary method `method` (router index `index`) with `payload` as a framed call is
    /// admitted, and starts its handler with the deadline a framed call would get, under `trace`.
    func begin(
        _ index: Int?, _ method: String, _ payload: [UInt8], _ timeoutMilliseconds: UInt64, _ caller: RPCCaller,
        _ trace: TraceContext, started: UInt64
    ) -> Begun {
        let admitted: Admitted
        switch admit(index, name: method, asker: .caller(caller.identities), bytes: payload.count) {
        case .success(let admission): admitted = admission
        case .failure(let refusal): return .answered(.failure(refusal.error))
        }
        let entry = router.entries[admitted.index]
        let budget = callTime(timeoutMilliseconds: timeoutMilliseconds)
        let deadline = started.saturatingAdd(budget)
        let context = RPCRequestContext(
            method: entry.name, deadline: deadline, peerIdentities: caller.identities ?? [],
            callerReadOnly: admitted.readOnly, peer: caller.peer, clock: clock, trace: trace)
        let answer = CallAnswer()
        /// Sets `answer` from any thread, for a call answered later.
        func responder() -> RPCResponder {
            RPCResponder { [self] result in
                TraceContext.$current.withValue(trace) {
                    let mapped = result.mapError { rpcError(from: $0, method: entry.name) }
                    logCall(context, mapped.map { _ in () })
                    answer.set(mapped)
                }
            }
        }
        switch entry.handler(readOnly: admitted.readOnly) {
        case .inline(let handler):
            var output: [UInt8] = []
            do {
                try payload.withUnsafeBytes { try handler($0, &output) }
                return .answered(.success(output))
            } catch let later as RPCHandOff {
                TraceContext.$current.withValue(trace) { later.start(context, responder()) }
                return .running(answer, deadline: deadline, budget: budget, task: nil)
            } catch {
                return .answered(
                    .failure(TraceContext.$current.withValue(trace) { rpcError(from: error, method: entry.name) }))
            }
        case .unary(let handler):
            let task = Task { answer.set(await self.runUnary(handler, context, payload)) }
            return .running(answer, deadline: deadline, budget: budget, task: task)
        case .deferred(let handler):
            TraceContext.$current.withValue(trace) {
                payload.withUnsafeBytes { bytes in
                    handler(context, bytes, responder())
                }
            }
            return .running(answer, deadline: deadline, budget: budget, task: nil)
        case .serverStream:
            return .answered(
                .failure(RPCError(.unimplemented, "\(entry.name) is a server stream: call it as one")))
        }
    }

    fileprivate func callBlocking(
        _ index: Int?, _ method: String, _ payload: [UInt8], _ timeoutMilliseconds: UInt64, _ caller: RPCCaller,
        _ trace: TraceContext, started: UInt64
    ) -> Result<[UInt8], RPCError> {
        callStarted()
        defer { callFinished() }
        switch begin(index, method, payload, timeoutMilliseconds, caller, trace, started: started) {
        case .answered(let result): return result
        case .running(let answer, let deadline, let budget, let task):
            guard let result = answer.wait(until: deadline, on: clock) else {
                task?.cancel()
                return .failure(RPCError(.deadlineExceeded, Self.deadlineExceeded(budget)))
            }
            return result
        }
    }
}

/// The one answer a call's caller waits for, blocked or suspended: the first `set` counts.
final class CallAnswer: Sendable {
    private struct State {
        var result: Result<[UInt8], RPCError>?
        var waiter: CheckedContinuation<Result<[UInt8], RPCError>, Never>?
    }

    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    func set(_ value: Result<[UInt8], RPCError>) {
        let (first, waiter) = state.withLock {
            state -> (Bool, CheckedContinuation<Result<[UInt8], RPCError>, Never>?) in
            guard case .none = state.result else { return (false, nil) }
            state.result = value
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        guard first else { return }
        done.signal()
        waiter?.resume(returning: value)
    }

    /// The answer, or nil when `clock`'s monotonic time `deadline` passed first.
    func wait(until deadline: UInt64, on clock: any ServiceClock) -> Result<[UInt8], RPCError>? {
        let left = deadline.subtractingClamped(clock.nanoseconds())
        guard clock.wait(done, for: .nanoseconds(Int64(clamping: left))) else { return nil }
        return state.withLock { $0.result }
    }

    /// The answer, suspending until it is set (by the handler, or by the call's deadline).
    func value() async -> Result<[UInt8], RPCError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<[UInt8], RPCError>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
