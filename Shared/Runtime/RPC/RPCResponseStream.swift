import Synchronization
public import Wire

/// The messages of a server-streaming call, as an async sequence of serialized messages.
/// Iteration ends when the server ends the stream with OK and throws `RPCError` otherwise.
/// Credit flows back to the server as messages are consumed, so an unread stream holds at
/// most its window of messages in memory. Dropping the stream cancels the call.
public struct RPCResponseStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    let handle: StreamHandle

    init(handle: StreamHandle) { self.handle = handle }

    /// A stream whose messages are all here: `messages`, then the end `end` (nil: OK). For a
    /// transport that answers from memory (a test's).
    public init(messages: [[UInt8]], end: RPCError?) {
        let state = ResponseStreamState(window: .max, grant: { _ in }, cancelCall: {})
        for message in messages { state.push(message) }
        state.finish(end)
        handle = StreamHandle(state: state)
    }

    public func makeAsyncIterator() -> Iterator { Iterator(handle: handle) }

    /// Cancels the call; iteration ends with CANCELLED.
    public func cancel() { handle.cancel() }

    public struct Iterator: AsyncIteratorProtocol {
        let handle: StreamHandle

        public mutating func next() async throws(RPCError) -> [UInt8]? {
            try await handle.state.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(RPCError) -> [UInt8]? {
            try await handle.state.next()
        }
    }
}

/// Owned by the consumer: when the last copy of a stream goes away, its call is cancelled.
final class StreamHandle: Sendable {
    let state: ResponseStreamState

    init(state: ResponseStreamState) { self.state = state }

    func cancel() { state.cancel() }

    deinit { if !state.isFinished { state.cancel() } }
}

/// Shared between the event loop (which pushes) and the consumer (which pulls).
final class ResponseStreamState: Sendable {
    private struct State {
        var buffer: [[UInt8]] = []
        var end: RPCError?? = nil  // .some(nil): ended OK
        var waiter: CheckedContinuation<Void, Never>?
        var consumedSinceGrant: UInt32 = 0
    }

    private let state = Mutex(State())
    let window: UInt32
    /// Called with the number of messages consumed when it is time to grant more credit.
    private let grant: @Sendable (UInt32) -> Void
    /// Tells the server to stop the call.
    private let cancelCall: @Sendable () -> Void

    init(window: UInt32, grant: @escaping @Sendable (UInt32) -> Void, cancelCall: @escaping @Sendable () -> Void) {
        self.window = window
        self.grant = grant
        self.cancelCall = cancelCall
    }

    /// Ends the stream with CANCELLED for the reader and cancels the call.
    func cancel() {
        finish(RPCError(.cancelled, "the stream was cancelled"))
        cancelCall()
    }

    var isFinished: Bool { state.withLock { $0.end != nil } }

    func push(_ message: [UInt8]) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.buffer.append(message)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func finish(_ error: RPCError?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.end == nil { state.end = .some(error) }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func next() async throws(RPCError) -> [UInt8]? {
        while true {
            enum Step {
                case message([UInt8], grant: UInt32)
                case end(RPCError?)
                case wait
            }
            let step = state.withLock { state -> Step in
                if !state.buffer.isEmpty {
                    let message = state.buffer.removeFirst()
                    state.consumedSinceGrant += 1
                    var grant: UInt32 = 0
                    if state.end == nil && state.consumedSinceGrant >= max(1, window / 2) {
                        grant = state.consumedSinceGrant
                        state.consumedSinceGrant = 0
                    }
                    return .message(message, grant: grant)
                }
                if let end = state.end { return .end(end) }
                return .wait
            }
            switch step {
            case .message(let message, let amount):
                if amount > 0 { grant(amount) }
                return message
            case .end(let error):
                if let error { throw error }
                return nil
            case .wait:
                // Cancelling the reading task ends the stream and the call.
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let ready = state.withLock { state -> Bool in
                            if !state.buffer.isEmpty || state.end != nil { return true }
                            state.waiter = continuation
                            return false
                        }
                        if ready { continuation.resume() }
                    }
                } onCancel: {
                    cancel()
                }
            }
        }
    }
}
