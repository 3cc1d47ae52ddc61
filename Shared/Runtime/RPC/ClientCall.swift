import Observability
import Wire

/// One call a client has started, from the moment it is issued until its answer (or failure)
/// is delivered exactly once. Confined to the client's event loop.
final class ClientCall {
    enum Completion {
        case unary(CheckedContinuation<Result<[UInt8], RPCError>, Never>)
        case stream(ResponseStreamState)
    }

    let token: UInt64
    /// NUL-terminated method name, ready for the envelope.
    let method: [CChar]
    let methodName: String
    /// NUL-terminated `traceparent` the request carries.
    let traceparent: [CChar]
    let request: [UInt8]
    /// Monotonic nanoseconds; nil means no deadline.
    let deadline: UInt64?
    let window: UInt32
    private var completion: Completion?
    var timer: TimerQueue.ID?
    /// Where the call was sent, once it was.
    weak var connection: ClientConnection?
    var callID: UInt64 = 0

    /// `trace`: what the request carries as its `traceparent`.
    init(
        token: UInt64, method: String, trace: TraceContext, request: [UInt8], deadline: UInt64?, window: UInt32,
        completion: Completion
    ) {
        self.token = token
        self.methodName = method
        self.method = Array(method.utf8CString)
        self.traceparent = trace.traceparentCString
        self.request = request
        self.deadline = deadline
        self.window = window
        self.completion = completion
    }

    var isFinished: Bool { completion == nil }
    var isStream: Bool { if case .stream = completion { true } else { false } }

    /// The remaining time as the envelope's timeout_ms (at least 1 while time is left).
    func timeoutMilliseconds(now: UInt64) -> UInt32 {
        guard let deadline else { return 0 }
        guard deadline > now else { return 1 }
        return UInt32(clamping: (deadline - now + 999_999) / 1_000_000)
    }

    /// Delivers one stream message.
    func deliver(message: [UInt8]) {
        if case .stream(let state) = completion { state.push(message) }
    }

    /// Delivers the outcome: the response payload (unary) or the end of the stream.
    func finish(_ result: Result<[UInt8], RPCError>) {
        guard let completion else { return }
        self.completion = nil
        switch completion {
        case .unary(let continuation): continuation.resume(returning: result)
        case .stream(let state):
            switch result {
            case .success: state.finish(nil)
            case .failure(let error): state.finish(error)
            }
        }
    }
}
