import CShims
import Foundation
import Glibc
import Sockets
import Synchronization

/// The thread of an `HTTPConnectionPool`: one epoll loop over the pool's non-blocking sockets.
/// Other threads hand it exchanges with `submit`, which wakes it through an eventfd (one write
/// per batch, however many were queued); everything else here is touched only on its thread.
/// Each exchange's answer is handed to its `reply` on this thread. With `maxActive`, at most that
/// many exchanges are under way at once; the others wait in order, and the next starts in the
/// same turn of the loop that answers one (as a load generator keeps its connections busy),
/// its time limit counted from then.
/// A connection carries one exchange at a time; once its answer is read whole it waits idle
/// (still watched, so that the server closing it is seen) for the next exchange to its host.
final class HTTPClientLoop: @unchecked Sendable {  // mutable state is confined to the loop thread
    typealias Outcome = Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>

    /// One request to send and who takes its answer.
    struct Exchange: Sendable {
        let message: [UInt8]
        let target: HostPort
        /// Its time limit in nanoseconds, counted from when it starts.
        let timeout: UInt64
        /// `DispatchTime` uptime nanoseconds, set when it starts.
        var deadline: UInt64 = .max
        let maxBody: Int
        /// Called once with the answer, on the loop's thread: it must not block.
        let reply: @Sendable (Outcome) -> Void
    }

    /// One TCP connection: owns the socket, closed in `deinit`.
    final class Connection {
        let descriptor: Int32
        let target: HostPort
        var exchange: Exchange?
        var written = 0
        var buffer: [UInt8] = []
        var connecting: Bool
        /// Whether it carried an answer before this exchange (then a close before any byte of
        /// the answer sends the exchange once more on a new connection).
        var reused = false
        /// The target's other addresses, tried in turn when this one refuses the connection.
        var fallbacks: [SocketAddress] = []

        init(descriptor: Int32, target: HostPort, connecting: Bool) {
            self.descriptor = descriptor
            self.target = target
            self.connecting = connecting
        }

        deinit { close(descriptor) }
    }

    private let maxIdle: Int
    private let maxActive: Int
    private let epollFD: Int32
    private let wakeFD: Int32
    private let submitted = Mutex<[Exchange]>([])
    private let wakePending = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)

    // Loop-thread state.
    private var connections: [Int32: Connection] = [:]
    private var idle: [HostPort: [Connection]] = [:]
    private var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    /// Exchanges under way (on a connection, or between connections).
    private var active = 0
    /// Exchanges waiting for one under way to end, in order from `queuedHead`.
    private var queued: [Exchange] = []
    private var queuedHead = 0
    private var pumping = false

    private static let wakeToken = UInt64.max

    init(maxIdle: Int, maxActive: Int = .max) {
        self.maxIdle = maxIdle
        self.maxActive = maxActive
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(epollFD >= 0 && wakeFD >= 0, "epoll/eventfd: \(errno)")
        _ = cshim_epoll_add(epollFD, wakeFD, EPOLLIN.rawValue, Self.wakeToken)
        let thread = Thread { [self] in run() }
        thread.name = "http-client"
        thread.start()
    }

    /// Ends the loop: the exchanges in progress are answered `.cancelled`.
    func stop() {
        running.store(false, ordering: .releasing)
        wake()
    }

    func submit(_ exchange: Exchange) {
        submitted.withLock { $0.append(exchange) }
        wake()
    }

    /// Hands over several exchanges at once: one lock and at most one wake-up for all.
    func submit(_ exchanges: [Exchange]) {
        guard !exchanges.isEmpty else { return }
        submitted.withLock { $0.append(contentsOf: exchanges) }
        wake()
    }

    private func wake() {
        guard !wakePending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func run() {
        var tokens = [UInt64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        while running.load(ordering: .acquiring) {
            let now = DispatchTime.now().uptimeNanoseconds
            let next = nextDeadline()
            let timeout = next.map { Int32(min(($0 > now ? $0 - now : 0) / 1_000_000 + 1, 1000)) } ?? 1000
            let count = tokens.withUnsafeMutableBufferPointer { t in
                events.withUnsafeMutableBufferPointer { e in
                    cshim_epoll_wait(epollFD, t.baseAddress, e.baseAddress, Int32(t.count), timeout)
                }
            }
            for index in 0..<max(0, Int(count)) {
                if tokens[index] == Self.wakeToken {
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                    wakePending.store(false, ordering: .releasing)
                    queued.append(
                        contentsOf: submitted.withLock { batch in
                            defer { batch = [] }
                            return batch
                        })
                    pump()
                } else if let connection = connections[Int32(truncatingIfNeeded: tokens[index])] {
                    serve(connection, events: events[index])
                }
            }
            if let next, next <= DispatchTime.now().uptimeNanoseconds { expire() }
        }
        // The waiting ones first, so that none starts as those under way end.
        for exchange in queued[queuedHead...] { exchange.reply(.failure(.cancelled)) }
        queued = []
        queuedHead = 0
        for connection in Array(connections.values) { finish(connection, .failure(.cancelled), keep: false) }
        for exchange in submitted.withLock({ $0 }) { exchange.reply(.failure(.cancelled)) }
        close(epollFD)
        close(wakeFD)
    }

    /// Starts the waiting exchanges while fewer than `maxActive` are under way.
    private func pump() {
        // An exchange that fails at once ends inside `start` and pumps again: the loop here
        // goes on instead.
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while active < maxActive, queuedHead < queued.count {
            var exchange = queued[queuedHead]
            queuedHead += 1
            if queuedHead == queued.count {
                queued.removeAll(keepingCapacity: true)
                queuedHead = 0
            } else if queuedHead >= 1024, queuedHead * 2 >= queued.count {
                queued.removeFirst(queuedHead)
                queuedHead = 0
            }
            active += 1
            let (deadline, overflow) = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(exchange.timeout)
            exchange.deadline = overflow ? .max : deadline
            start(exchange)
        }
    }

    /// Hands `outcome` to the exchange and starts the next one waiting.
    private func answer(_ exchange: Exchange, _ outcome: Outcome) {
        exchange.reply(outcome)
        active -= 1
        pump()
    }

    /// Sends `exchange` on an idle connection to its host, else on a new one.
    private func start(_ exchange: Exchange, fresh: Bool = false) {
        if !fresh, let connection = idle[exchange.target]?.popLast() {
            connection.exchange = exchange
            connection.written = 0
            connection.reused = true
            send(connection)
            return
        }
        // getaddrinfo may block this thread: it runs only when a connection is opened (rare
        // once connections are kept alive), and a literal address needs no lookup.
        let addresses: [SocketAddress]
        do { addresses = try SocketAddress.resolve(host: exchange.target.host, port: exchange.target.port) } catch {
            return answer(exchange, .failure(.network("host not found")))
        }
        connect(exchange, addresses[...])
    }

    /// Connects to the first of `addresses` that takes a connection, for `exchange`.
    private func connect(_ exchange: Exchange, _ addresses: ArraySlice<SocketAddress>) {
        switch open(exchange.target, addresses) {
        case .failure(let failure): answer(exchange, .failure(failure))
        case .success(let connection):
            connection.exchange = exchange
            connections[connection.descriptor] = connection
            _ = cshim_epoll_add(
                epollFD, connection.descriptor, EPOLLIN.rawValue | EPOLLOUT.rawValue, UInt64(connection.descriptor))
            if !connection.connecting { send(connection) }
        }
    }

    /// A non-blocking socket connecting to the first of `addresses` that does not refuse at once.
    private func open(_ target: HostPort, _ addresses: ArraySlice<SocketAddress>) -> Result<
        Connection, HTTPClientTransport.Failure
    > {
        for (index, address) in zip(addresses.indices, addresses) {
            let fd = socket(
                address.family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                    | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            let rc = address.withSockAddr { Glibc.connect(fd, $0, $1) }
            if rc == 0 || errno == EINPROGRESS {
                let connection = Connection(descriptor: fd, target: target, connecting: rc != 0)
                connection.fallbacks = Array(addresses[(index + 1)...])
                return .success(connection)
            }
            close(fd)
        }
        return .failure(.network("connection refused"))
    }

    private func serve(_ connection: Connection, events: UInt32) {
        if connection.connecting {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(connection.descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0, let exchange = connection.exchange, !connection.fallbacks.isEmpty {
                connection.exchange = nil
                drop(connection)
                return connect(exchange, connection.fallbacks[...])
            }
            if error != 0 {
                let cause = error == ECONNREFUSED ? "connection refused" : "connection lost"
                return finish(connection, .failure(.network(cause)), keep: false)
            }
            guard events & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 else { return }
            connection.connecting = false
        }
        if let exchange = connection.exchange, connection.written < exchange.message.count {
            send(connection)
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { receive(connection) }
    }

    private func send(_ connection: Connection) {
        guard let exchange = connection.exchange else { return }
        while connection.written < exchange.message.count {
            let count = exchange.message.withUnsafeBytes {
                Glibc.send(
                    connection.descriptor, $0.baseAddress! + connection.written,
                    exchange.message.count - connection.written, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                connection.written += count
            } else if count < 0, errno == EAGAIN || errno == EINTR {
                _ = cshim_epoll_mod(
                    epollFD, connection.descriptor, EPOLLIN.rawValue | EPOLLOUT.rawValue,
                    UInt64(connection.descriptor))
                return
            } else {
                return closed(connection)
            }
        }
        _ = cshim_epoll_mod(epollFD, connection.descriptor, EPOLLIN.rawValue, UInt64(connection.descriptor))
    }

    private func receive(_ connection: Connection) {
        var ended = false
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(connection.descriptor, $0.baseAddress!, $0.count, 0) }
            if count > 0 {
                connection.buffer.append(contentsOf: chunk[..<count])
                if count < chunk.count { break }
            } else if count < 0, errno == EINTR {
                continue
            } else {
                ended = count == 0 || errno != EAGAIN
                break
            }
        }
        guard let exchange = connection.exchange else {
            // An idle connection that the server closed (or that spoke out of turn) is done.
            if ended || !connection.buffer.isEmpty { drop(connection) }
            return
        }
        switch HTTPAnswer.parse(connection.buffer, ended: ended, maxBody: exchange.maxBody) {
        case .incomplete:
            break
        case .complete(let status, let headers, let body, let consumed, let keep):
            connection.buffer.removeFirst(consumed)
            finish(
                connection, .success(.init(status: status, headers: headers, body: Data(body))),
                keep: keep && !ended && connection.buffer.isEmpty)
        case .closedEmpty:
            closed(connection)
        case .failed(let failure):
            finish(connection, .failure(failure), keep: false)
        }
    }

    /// The server closed the connection before any byte of the answer: a kept-alive one it had
    /// dropped while idle is replaced and the exchange sent again; otherwise the exchange fails.
    private func closed(_ connection: Connection) {
        guard let exchange = connection.exchange else { return drop(connection) }
        if connection.reused, connection.buffer.isEmpty {
            connection.exchange = nil
            drop(connection)
            start(exchange, fresh: true)
        } else {
            finish(connection, .failure(.network("connection lost")), keep: false)
        }
    }

    /// Answers the connection's exchange; keeps the connection idle or closes it.
    private func finish(_ connection: Connection, _ outcome: Outcome, keep: Bool) {
        let exchange = connection.exchange
        connection.exchange = nil
        if keep, idle[connection.target, default: []].count < maxIdle {
            idle[connection.target, default: []].append(connection)
        } else {
            drop(connection)
        }
        if let exchange { answer(exchange, outcome) }
    }

    private func drop(_ connection: Connection) {
        _ = cshim_epoll_del(epollFD, connection.descriptor)
        connections[connection.descriptor] = nil
        idle[connection.target]?.removeAll { $0 === connection }
    }

    /// The earliest deadline of the exchanges in progress (walked without copying: once a
    /// turn of the loop).
    private func nextDeadline() -> UInt64? {
        var next: UInt64?
        for connection in connections.values {
            if let deadline = connection.exchange?.deadline, deadline < next ?? .max { next = deadline }
        }
        return next
    }

    /// Fails the exchanges whose time is up, closing their connections.
    private func expire() {
        let now = DispatchTime.now().uptimeNanoseconds
        for connection in Array(connections.values) {
            if let exchange = connection.exchange, exchange.deadline <= now {
                finish(connection, .failure(.network(HTTPClientTransport.Failure.timedOutCause)), keep: false)
            }
        }
    }
}
