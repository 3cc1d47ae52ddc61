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
        /// Set while the connection has more unsent output than its high watermark.
        var blocked = false
        /// Bytes handed to the event loop that it has not yet put in the connection's output.
        var inTransit = 0

        var mayDeliver: Bool { credit > 0 && !blocked && inTransit < ServerStreamWriter.maximumInTransit }
        var waiter: CheckedContinuation<Void, Never>?
        var finished = false
    }

    /// The most credit a stream may hold; grants beyond it are cut to it.
    static let maximumCredit: UInt32 = 4096
    /// How many bytes a handler may have on their way to the loop before `send` waits.
    static let maximumInTransit = 1 << 20

    private let state: Mutex<State>
    private let deliver: @Sendable ([UInt8]) -> Void

    init(initialCredit: UInt32, deliver: @escaping @Sendable ([UInt8]) -> Void) {
        state = Mutex(State(credit: min(initialCredit, Self.maximumCredit)))
        self.deliver = deliver
    }

    /// Sends one serialized message when credit allows.
    public func send(_ payload: [UInt8]) async throws {
        while true {
            let outcome: Bool? = state.withLock { state in
                if state.finished { return nil }
                if state.mayDeliver {
                    state.credit -= 1
                    state.inTransit += payload.count
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
                    if state.finished || state.mayDeliver { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
            try Task.checkCancellation()
        }
    }

    /// Adds credit (the client's window update), up to `maximumCredit` in all.
    func grant(_ amount: UInt32) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.credit = UInt32(min(UInt64(state.credit) + UInt64(amount), UInt64(Self.maximumCredit)))
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The loop has put `count` bytes of this stream in the connection's output.
    func delivered(_ count: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.inTransit -= count
            guard state.mayDeliver else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Holds `send` back while the connection's output is above its high watermark, so a
    /// reader that grants credit but does not read cannot make the server buffer without bound.
    func setBlocked(_ blocked: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.blocked = blocked
            guard !blocked else { return nil }
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
