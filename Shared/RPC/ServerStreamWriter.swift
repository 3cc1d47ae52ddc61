import CShims
import Foundation
import Glibc
import Synchronization
import Wire

/// Sends the messages of one server stream. The client grants credit (a number of messages);
/// `send` suspends while none is left, so a slow reader holds back the handler instead of
/// making the server buffer without bound.
public final class ServerStreamWriter: Sendable {
    private struct State {
        var credit: UInt32
        var waiter: CheckedContinuation<Void, Never>?
        var finished = false
    }

    private let state: Mutex<State>
    private let deliver: @Sendable ([UInt8]) -> Void

    init(initialCredit: UInt32, deliver: @escaping @Sendable ([UInt8]) -> Void) {
        state = Mutex(State(credit: initialCredit))
        self.deliver = deliver
    }

    /// Sends one serialized message when credit allows.
    public func send(_ payload: [UInt8]) async throws {
        while true {
            let outcome: Bool? = state.withLock { state in
                if state.finished { return nil }
                if state.credit > 0 {
                    state.credit -= 1
                    return true
                }
                return false
            }
            guard let ready = outcome else { throw RPCError(.cancelled, "the stream has ended") }
            if ready {
                deliver(payload)
                return
            }
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.finished || state.credit > 0 { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
            try Task.checkCancellation()
        }
    }

    /// Adds credit (the client's window update).
    func grant(_ amount: UInt32) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.credit = state.credit.addingReportingOverflow(amount).overflow ? .max : state.credit + amount
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Ends the stream: a waiting or later `send` throws.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}
