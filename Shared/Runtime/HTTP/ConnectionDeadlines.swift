import CShims
import Dispatch
import Foundation
import Glibc
import Observability
import Synchronization

/// The header and whole-request deadlines of a server's connections, which libmicrohttpd's
/// idle timeout does not give (a byte now and then keeps a connection alive there forever).
///
/// Connections are known by their socket. libmicrohttpd tells the connection's opening and
/// closing (the closing before it closes the socket), and the dispatcher each request's steps.
/// A thread of its own, ticking on the server's clock, shuts down the socket of a connection past its deadline (unless bytes it sent wait
/// unread, when every server thread is busy: that delay is not the client's), under the same lock the
/// closing takes, so a socket number reused by a later connection is never touched; the
/// connection's thread then sees the end of the stream and closes it.
final class ConnectionDeadlines: Sendable {
    /// What a connection waits for and until when (monotonic ns).
    private struct Entry {
        var headersBy: UInt64?
        var requestBy: UInt64?
    }

    /// Why a connection was cut.
    enum Cut { case headers, request }

    private let headerTimeout: UInt64
    private let requestTimeout: UInt64
    private let table = Mutex<[Int32: Entry]>([:])
    private let headerCuts = Atomic<Int>(0)
    private let requestCuts = Atomic<Int>(0)
    private let clock: any ServiceClock
    /// Signalled to end the ticking thread.
    private let stop = DispatchSemaphore(value: 0)

    init(headerTimeout: Duration, requestTimeout: Duration, clock: any ServiceClock) {
        self.headerTimeout = headerTimeout.nanosecondsClamped
        self.requestTimeout = requestTimeout.nanosecondsClamped
        self.clock = clock
        // A tenth of the shorter deadline, between 10 ms and 250 ms: a cut comes that late at most.
        let tick = max(10_000_000, min(250_000_000, min(self.headerTimeout, self.requestTimeout) / 10))
        // Not a task: the cooperative pool's threads may all be blocked by the very clients
        // being cut.
        let stop = self.stop
        let thread = Thread { [weak self, clock] in
            while !clock.wait(stop, for: .nanoseconds(Int64(tick))) {
                guard let self else { return }
                self.cutOverdue()
            }
        }
        thread.name = "http-deadlines"
        thread.start()
    }

    deinit { stop.signal() }

    /// Connections cut for `reason` so far.
    func cutCount(_ reason: Cut) -> Int {
        reason == .headers ? headerCuts.load(ordering: .relaxed) : requestCuts.load(ordering: .relaxed)
    }

    /// A connection opened: it waits for its first request.
    func opened(_ fd: Int32) {
        let now = clock.nanoseconds()
        table.withLock {
            $0[fd] = Entry(headersBy: now.saturatingAdd(headerTimeout), requestBy: now.saturatingAdd(requestTimeout))
        }
    }

    /// The request's headers are in.
    func headersArrived(_ fd: Int32) {
        table.withLock { $0[fd]?.headersBy = nil }
    }

    /// The request's body is in: what is left (the handler, the response) is not the client's to slow.
    func requestRead(_ fd: Int32) {
        table.withLock { $0[fd]?.requestBy = nil }
    }

    /// A request ended: the connection waits for the next one. Never adds a connection that
    /// has already closed.
    func requestEnded(_ fd: Int32) {
        let now = clock.nanoseconds()
        table.withLock { table in
            guard table[fd] != nil else { return }
            table[fd] = Entry(headersBy: now.saturatingAdd(headerTimeout), requestBy: now.saturatingAdd(requestTimeout))
        }
    }

    /// The connection is closing; its socket is still open.
    func closed(_ fd: Int32) {
        _ = table.withLock { $0.removeValue(forKey: fd) }
    }

    private func cutOverdue() {
        let now = clock.nanoseconds()
        table.withLock { table in
            for (fd, entry) in table {
                let reason: Cut
                if let by = entry.headersBy, by <= now {
                    reason = .headers
                } else if let by = entry.requestBy, by <= now {
                    reason = .request
                } else {
                    continue
                }
                // Bytes the client sent that no server thread has read yet: the delay is ours
                // (every thread busy in a handler), not the client's. Looked at again next tick.
                if cshim_socket_unread_bytes(fd) > 0 { continue }
                // Cut once; the entry goes when libmicrohttpd reports the close.
                table[fd] = Entry()
                shutdown(fd, Int32(SHUT_RDWR))
                if reason == .headers {
                    headerCuts.add(1, ordering: .relaxed)
                } else {
                    requestCuts.add(1, ordering: .relaxed)
                }
            }
        }
    }

}
