import CShims
import Glibc
import Wire

/// A single-threaded epoll load generator in redis-benchmark's shape: `clients` non-blocking
/// TCP_NODELAY connections to 127.0.0.1, each with `pipeline` requests in flight. A batch of
/// `pipeline` frames leaves in one write; the next batch goes once every reply of the previous
/// one arrived, so each connection reuses call ids 1...pipeline. A request's latency is the
/// time of the read that delivered its reply minus the time its batch was sent. Requests carry
/// an empty payload, each the payload `payload(connection, sequence)` builds, or each a frame
/// of a `RequestPool` that `pick(connection, sequence)` chooses (copied, with no encoding).
public final class LoadGenerator {
    /// The payload of request number `sequence` (from 0) on connection `connection`.
    public typealias Payload = (_ connection: Int, _ sequence: Int) -> [UInt8]
    /// The pool entry of request number `sequence` (from 0) on connection `connection`.
    public typealias Pick = (_ connection: Int, _ sequence: Int) -> Int
    /// Looks at a successful reply's payload; a returned text makes it count as failed.
    public typealias ReplyCheck = (_ payload: UnsafeRawBufferPointer) -> String?
    /// What one phase measured.
    public struct Outcome {
        /// Replies without a status, the only ones that count towards calls/s and latency.
        public var succeeded = 0
        /// Replies that carried a status (the call failed).
        public var failed = 0
        public var seconds = 0.0
        public var latencies: LatencySamples
        /// The status text of the first failed call, for the error message.
        public var firstFailure: String?
    }

    private struct Connection {
        let fd: Int32
        /// When the current batch was written (monotonic ns).
        var sentAt: UInt64 = 0
        /// Replies of the current batch still to come.
        var outstanding = 0
        /// Bytes of the current batch written so far.
        var written = 0
        var wantsWritable = false
        /// Bytes of an incomplete reply frame kept at the start of this connection's inbox.
        var inboxFill = 0
        /// The batch in flight (its own when requests carry payloads).
        var batch: [UInt8] = []
        /// Requests sent on this connection so far.
        var sequence = 0
    }

    public let clients: Int
    public let pipeline: Int
    private let method: String
    private let payload: Payload?
    private let pool: (frames: RequestPool, pick: Pick)?
    private let check: ReplyCheck?
    private let epollFD: Int32
    private var connections: [Connection] = []
    /// `pipeline` request frames with call ids 1...pipeline and empty payloads, encoded once.
    private let batch: [UInt8]
    /// awaiting[connection * pipeline + id - 1]: the request with that id has not been answered.
    private var awaiting: [Bool]
    /// One `inboxSize` region per connection for reply bytes.
    private let inbox: UnsafeMutableRawBufferPointer
    private static let inboxSize = 64 * 1024
    /// Every `verifyEvery`-th reply is also decoded by protobuf-c to cross-check the hand decoding.
    private static let verifyEvery = 1024
    private var replies = 0
    private var outcome = Outcome(latencies: LatencySamples(capacity: 0))

    /// Connects `clients` sockets to 127.0.0.1:`port` for calls of `method`, with empty
    /// payloads or those `payload` builds. Throws when a socket cannot be set up.
    public convenience init(
        port: Int, clients: Int, pipeline: Int, method: String, payload: Payload? = nil, check: ReplyCheck? = nil
    ) throws(BenchError) {
        try self.init(
            ports: [port], clients: clients, pipeline: pipeline, method: method, payload: payload, pool: nil,
            check: check)
    }

    /// `init(port:…)` with the connections spread over several servers: connection `i` to
    /// `ports[i % ports.count]`.
    public convenience init(
        ports: [Int], clients: Int, pipeline: Int, method: String, payload: Payload? = nil, check: ReplyCheck? = nil
    ) throws(BenchError) {
        try self.init(
            ports: ports, clients: clients, pipeline: pipeline, method: method, payload: payload, pool: nil,
            check: check)
    }

    /// Connects `clients` sockets to 127.0.0.1:`port` for the requests of `pool` (whose method
    /// they call), request `sequence` of connection `connection` being entry `pick(connection,
    /// sequence)`. Throws when a socket cannot be set up.
    public convenience init(
        port: Int, clients: Int, pipeline: Int, pool: RequestPool, pick: @escaping Pick, check: ReplyCheck? = nil
    ) throws(BenchError) {
        precondition(pipeline <= RequestPool.maximumCallID)
        try self.init(
            ports: [port], clients: clients, pipeline: pipeline, method: pool.method, payload: nil, pool: (pool, pick),
            check: check)
    }

    private init(
        ports: [Int], clients: Int, pipeline: Int, method: String, payload: Payload?,
        pool: (frames: RequestPool, pick: Pick)?, check: ReplyCheck?
    ) throws(BenchError) {
        precondition(clients > 0 && pipeline > 0)
        self.clients = clients
        self.pipeline = pipeline
        self.method = method
        self.payload = payload
        self.pool = pool
        self.check = check
        var frames: [UInt8] = []
        method.withCString { name in
            for id in 1...pipeline {
                Envelope.appendFrame(to: &frames, callID: UInt64(id), kind: .request, method: name)
            }
        }
        batch = frames
        awaiting = [Bool](repeating: false, count: clients * pipeline)
        inbox = .allocate(byteCount: clients * Self.inboxSize, alignment: 16)
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw BenchError("epoll_create1: \(Self.errorText())") }
        connections.reserveCapacity(clients)
        for index in 0..<clients {
            let fd = try Self.connect(port: ports[index % ports.count])
            connections.append(Connection(fd: fd))
            guard cshim_epoll_add(epollFD, fd, EPOLLIN.rawValue, UInt64(index)) == 0 else {
                throw BenchError("epoll_ctl: \(Self.errorText())")
            }
        }
    }

    deinit {
        for connection in connections { close(connection.fd) }
        if epollFD >= 0 { close(epollFD) }
        inbox.deallocate()
    }

    /// Sends `requests` requests (rounded up to whole batches) — or, with `duration`, as many as
    /// fit in it — and waits for every reply. Throws when the server closes a connection, sends
    /// a reply that matches no request in flight, or makes no progress for 5 s, or when the phase
    /// takes longer than `limit`.
    public func run(requests: Int, duration: Duration? = nil, limit: Duration = .seconds(120)) throws(BenchError)
        -> Outcome
    {
        // A run by count keeps every latency; a timed run (whose count is open) keeps the first
        // two million.
        outcome = Outcome(latencies: LatencySamples(capacity: (duration == nil ? requests : 2_000_000) + pipeline))
        var tokens = [UInt64](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        var issued = 0
        var answered = 0
        let start = MonotonicTime.nanoseconds()
        let deadline = start + UInt64(limit.components.seconds) * 1_000_000_000
        let stopSending =
            duration.map {
                start + UInt64($0.components.seconds) * 1_000_000_000
                    + UInt64($0.components.attoseconds / 1_000_000_000)
            }
            ?? UInt64.max
        var lastProgress = start
        for index in 0..<clients where issued < requests {
            try send(index)
            issued += pipeline
        }
        while answered < issued {
            let count = tokens.withUnsafeMutableBufferPointer { t in
                events.withUnsafeMutableBufferPointer { e in
                    cshim_epoll_wait(epollFD, t.baseAddress, e.baseAddress, Int32(t.count), 100)
                }
            }
            if count < 0 && errno != EINTR { throw BenchError("epoll_wait: \(Self.errorText())") }
            for event in 0..<max(0, Int(count)) {
                let index = Int(tokens[event])
                if events[event] & EPOLLOUT.rawValue != 0 { try writePending(index) }
                guard events[event] & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 else { continue }
                answered += try receive(index)
                if connections[index].outstanding == 0 && issued < requests && MonotonicTime.nanoseconds() < stopSending
                {
                    try send(index)
                    issued += pipeline
                }
            }
            let now = MonotonicTime.nanoseconds()
            if count > 0 { lastProgress = now }
            if now > deadline {
                throw BenchError("the phase took longer than \(limit); \(issued - answered) replies missing")
            }
            if now - lastProgress > 5_000_000_000 {
                throw BenchError("no reply for 5 s with \(issued - answered) requests in flight")
            }
        }
        outcome.seconds = Double(MonotonicTime.nanoseconds() - start) / 1e9
        return outcome
    }

    // MARK: Writing

    private func send(_ index: Int) throws(BenchError) {
        for slot in (index * pipeline)..<((index + 1) * pipeline) { awaiting[slot] = true }
        if let payload {
            var frames: [UInt8] = []
            method.withCString { name in
                for id in 1...pipeline {
                    let bytes = payload(index, connections[index].sequence)
                    connections[index].sequence += 1
                    bytes.withUnsafeBytes { body in
                        Envelope.appendFrame(
                            to: &frames, callID: UInt64(id), kind: .request, method: name, payload: body)
                    }
                }
            }
            connections[index].batch = frames
        } else if let (frames, pick) = pool {
            var sequence = connections[index].sequence
            connections[index].batch.removeAll(keepingCapacity: true)
            for id in 1...pipeline {
                frames.append(pick(index, sequence), callID: UInt8(id), to: &connections[index].batch)
                sequence += 1
            }
            connections[index].sequence = sequence
        } else {
            connections[index].batch = batch
        }
        connections[index].outstanding = pipeline
        connections[index].written = 0
        connections[index].sentAt = MonotonicTime.nanoseconds()
        try writePending(index)
    }

    /// Writes what is left of the connection's batch; waits for EPOLLOUT when the socket is full.
    private func writePending(_ index: Int) throws(BenchError) {
        let fd = connections[index].fd
        var written = connections[index].written
        let batch = connections[index].batch
        while written < batch.count {
            let count = batch.withUnsafeBytes { bytes in write(fd, bytes.baseAddress! + written, bytes.count - written)
            }
            if count < 0 {
                if errno == EINTR { continue }
                guard errno == EAGAIN || errno == EWOULDBLOCK else { throw BenchError("write: \(Self.errorText())") }
                break
            }
            written += count
        }
        connections[index].written = written
        let wantsWritable = written < batch.count
        if wantsWritable != connections[index].wantsWritable {
            connections[index].wantsWritable = wantsWritable
            let interest = EPOLLIN.rawValue | (wantsWritable ? EPOLLOUT.rawValue : 0)
            guard cshim_epoll_mod(epollFD, fd, interest, UInt64(index)) == 0 else {
                throw BenchError("epoll_ctl: \(Self.errorText())")
            }
        }
    }

    // MARK: Reading

    /// Reads once from the connection and handles every whole reply frame; returns their count.
    private func receive(_ index: Int) throws(BenchError) -> Int {
        let base = inbox.baseAddress! + index * Self.inboxSize
        let fill = connections[index].inboxFill
        let count = read(connections[index].fd, base + fill, Self.inboxSize - fill)
        if count == 0 { throw BenchError("the server closed connection \(index)") }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
            throw BenchError("read: \(Self.errorText())")
        }
        let now = MonotonicTime.nanoseconds()
        let end = fill + count
        var offset = 0
        var handled = 0
        while end - offset >= 4 {
            let header = base + offset
            let length = Int(header.load(as: UInt32.self).bigEndian)
            guard length > 0 && length <= Self.inboxSize - 4 else {
                throw BenchError(
                    "reply frame length \(length) on connection \(index) is 0 or above \(Self.inboxSize - 4)")
            }
            guard end - offset - 4 >= length else { break }
            try handle(UnsafeRawBufferPointer(start: header + 4, count: length), on: index, at: now)
            offset += 4 + length
            handled += 1
        }
        if offset > 0 && offset < end { memmove(base, base + offset, end - offset) }
        connections[index].inboxFill = end - offset
        return handled
    }

    private func handle(_ frame: UnsafeRawBufferPointer, on index: Int, at now: UInt64) throws(BenchError) {
        guard let reply = ReplyFields(frame), reply.kind == UInt64(FrameKind.response.rawValue) else {
            throw BenchError("connection \(index) received a frame that is not a response envelope")
        }
        let id = reply.callID
        let slot = index * pipeline + Int(truncatingIfNeeded: id) - 1
        guard id >= 1 && id <= UInt64(pipeline) && awaiting[slot] else {
            throw BenchError("connection \(index) received a reply for call id \(id), which is not in flight")
        }
        awaiting[slot] = false
        connections[index].outstanding -= 1
        replies += 1
        var refusal: String?
        if !reply.hasStatus, let check {
            refusal = check(reply.payload)
        }
        if reply.hasStatus || refusal != nil {
            outcome.failed += 1
            if outcome.firstFailure == nil { outcome.firstFailure = refusal ?? Self.statusText(frame) }
        } else {
            outcome.succeeded += 1
            outcome.latencies.record(nanoseconds: now - connections[index].sentAt)
        }
        if replies % Self.verifyEvery == 1 {
            let agrees =
                (try? Envelope.withDecoded(frame) { view in
                    view.callID == id && view.kind == .response && (view.statusCode == .ok || reply.hasStatus)
                        && view.payload.count == reply.payload.count
                        && (view.payload.count == 0 || view.payload.elementsEqual(reply.payload))
                }) ?? false
            guard agrees else { throw BenchError("protobuf-c decodes reply \(id) differently from the hand decoding") }
        }
    }

    private static func statusText(_ frame: UnsafeRawBufferPointer) -> String {
        (try? Envelope.withDecoded(frame) { view in "\(view.statusCode): \(view.statusText)" }) ?? "undecodable status"
    }

    // MARK: Sockets

    /// A connected, non-blocking TCP_NODELAY socket to 127.0.0.1:`port`.
    private static func connect(port: Int) throws(BenchError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(errorText())") }
        var address = LoopbackAddress.make(port: port)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        var one: Int32 = 1
        guard connected,
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0,
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0
        else {
            let text = errorText()
            close(fd)
            throw BenchError("cannot connect to 127.0.0.1:\(port): \(text)")
        }
        return fd
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
