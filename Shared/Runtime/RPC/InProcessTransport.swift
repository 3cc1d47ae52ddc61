import Synchronization
public import Wire

/// A client transport that calls a server's router in this process: no socket, no frames, but
/// the same admission (draining, the access policy for `caller`, the method, its request limit),
/// the same deadlines (the caller's timeout or inherited deadline, else the server's default,
/// capped at its maximum), the same status mapping and metrics as a call over TCP. The server
/// need not listen: build it and hand it here. For tests of the logic behind a service, and for
/// a process that hosts a service beside its caller.
public struct InProcessTransport: ClientTransport {
    let server: RPCServer
    let caller: RPCCaller

    /// `caller`: who calls, as the HTTP gateway would name them (nil identities: a transport
    /// that authenticates nobody, refused by a server that has TLS).
    public init(server: RPCServer, caller: RPCCaller = RPCCaller(identities: nil, peer: "in-process")) {
        self.server = server
        self.caller = caller
    }

    public func call<Request, Response>(
        _ method: UnaryMethod<Request, Response>, _ request: Request, timeout: Duration?
    ) async throws(RPCError) -> Response {
        if Task.isCancelled { throw RPCError(.cancelled, "the caller cancelled the call") }
        let core = server.core
        let started = core.clock.nanoseconds()
        let index = core.router.index(named: method.name)
        core.callStarted()
        let result: Result<[UInt8], RPCError>
        switch core.begin(
            index, method.name, request.serialized(), timeoutMilliseconds(timeout, now: started), caller,
            .outgoing(), started: started)
        {
        case .answered(let answered): result = answered
        case .running(let answer, let deadline, let budget, let task):
            let expiry = Self.expire(at: deadline, on: core.clock) {
                answer.set(.failure(RPCError(.deadlineExceeded, ServerCore.deadlineExceeded(budget))))
                task?.cancel()
            }
            result = await withTaskCancellationHandler {
                await answer.value()
            } onCancel: {
                answer.set(.failure(RPCError(.cancelled, "the caller cancelled the call")))
                task?.cancel()
            }
            expiry.cancel()
        }
        core.callFinished()
        core.recordCall(index, result, started: started)
        return try Response(serialized: try result.get())
    }

    public func serverStream<Request, Response>(
        _ method: ServerStreamMethod<Request, Response>, _ request: Request, timeout: Duration?
    ) -> RPCResponseStream {
        let core = server.core
        let started = core.clock.nanoseconds()
        let payload = request.serialized()
        let window: UInt32 = 16
        let link = StreamLink()
        let state = ResponseStreamState(
            window: window, grant: { link.writer?.grant($0) }, cancelCall: { link.task?.cancel() })
        let stream = RPCResponseStream(handle: StreamHandle(state: state))
        let index = core.router.index(named: method.name)
        let entry: RPCRouter.Entry
        let readOnly: Bool
        switch core.admit(index, name: method.name, asker: .caller(caller.identities), bytes: payload.count) {
        case .success(let admitted):
            entry = core.router.entries[admitted.index]
            readOnly = admitted.readOnly
        case .failure(let refusal):
            state.finish(refusal.error)
            return stream
        }
        guard case .serverStream(let handler) = entry.handler(readOnly: readOnly) else {
            state.finish(RPCError(.unimplemented, "\(entry.name) is not a server stream"))
            return stream
        }
        let hasDeadline = timeout != nil || RPCRequestContext.currentDeadline != nil
        let budget = core.callTime(timeoutMilliseconds: timeoutMilliseconds(timeout, now: started))
        let deadline = started.saturatingAdd(budget)
        let context = RPCRequestContext(
            method: entry.name, deadline: deadline, peerIdentities: caller.identities ?? [], callerReadOnly: readOnly,
            peer: caller.peer, clock: core.clock, trace: .outgoing())
        let writer = ServerStreamWriter(initialCredit: window) { message in
            state.push(message)
            link.writer?.delivered(message.count)
        }
        link.writer = writer
        core.callStarted()
        link.task = Task {
            let result: RPCError?
            do {
                try await RPCRequestContext.$currentDeadline.withValue(hasDeadline ? deadline : nil) {
                    try await TraceContext.$current.withValue(context.trace) {
                        try await handler(context, payload, writer)
                    }
                }
                result = nil
            } catch {
                result = TraceContext.$current.withValue(context.trace) {
                    core.rpcError(from: error, method: context.method)
                }
            }
            writer.finish()
            core.logCall(context, result.map { .failure($0) } ?? .success(()))
            state.finish(result)
            core.callFinished()
        }
        if hasDeadline {
            let expiry = Self.expire(at: deadline, on: core.clock) {
                state.finish(RPCError(.deadlineExceeded, ServerCore.deadlineExceeded(budget)))
                link.task?.cancel()
            }
            // The timer goes with the stream's end.
            Task {
                _ = await link.task?.value
                expiry.cancel()
            }
        }
        return stream
    }

    /// Runs `action` when `clock` reaches monotonic `deadline`, unless the task it returns is
    /// cancelled first.
    private static func expire(
        at deadline: UInt64, on clock: any ServiceClock, _ action: @escaping @Sendable () -> Void
    )
        -> Task<Void, Never>
    {
        Task {
            let left = deadline.subtractingClamped(clock.nanoseconds())
            guard (try? await clock.sleep(for: .nanoseconds(Int64(clamping: left)))) != nil else { return }
            action()
        }
    }

    /// The timeout a framed call would carry: `timeout`, or what is left of the deadline of the
    /// call being served, in milliseconds (at least 1); 0 for the server's default.
    private func timeoutMilliseconds(_ timeout: Duration?, now: UInt64) -> UInt64 {
        var nanoseconds = timeout?.nanosecondsClamped
        if let inherited = RPCRequestContext.currentDeadline {
            nanoseconds = min(nanoseconds ?? .max, inherited.subtractingClamped(now))
        }
        return nanoseconds.map { max(1, $0 / 1_000_000) } ?? 0
    }
}

/// The writer and task of an in-process stream, set once it starts, for the reader's credit
/// and cancellation.
private final class StreamLink: Sendable {
    private let state = Mutex<(writer: ServerStreamWriter?, task: Task<Void, Never>?)>((nil, nil))

    var writer: ServerStreamWriter? {
        get { state.withLock { $0.writer } }
        set { state.withLock { $0.writer = newValue } }
    }

    var task: Task<Void, Never>? {
        get { state.withLock { $0.task } }
        set { state.withLock { $0.task = newValue } }
    }
}
