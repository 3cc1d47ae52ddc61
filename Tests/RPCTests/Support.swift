import Config
import Foundation
import Glibc
import Observability
import RPC
import Sockets
import Synchronization
import Testing
import Wire

/// Methods the runtime tests call.
enum TestMethods {
    static let echo = "test.v1.Test/Echo"
    static let echoAsync = "test.v1.Test/EchoAsync"
    static let held = "test.v1.Test/Held"
    static let count = "test.v1.Test/Count"
    static let health = "test.v1.Test/Health"
    static let remaining = "test.v1.Test/Remaining"
    static let firehose = "test.v1.Test/Firehose"
    static let prefetched = "test.v1.Test/Prefetched"
}

/// Lets a test hold handlers until it opens the gate; counts the handlers that arrived and
/// those that saw cancellation.
final class Gate: Sendable {
    private struct State {
        var open = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var arrived = 0
        var arrivalWaiters: [(Int, CheckedContinuation<Void, Never>)] = []
        var cancelled = 0
    }

    private let state = Mutex(State())

    func pass() async {
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.arrived += 1
                var ready = state.arrivalWaiters.filter { $0.0 <= state.arrived }.map(\.1)
                state.arrivalWaiters.removeAll { $0.0 <= state.arrived }
                if state.open { ready.append(continuation) } else { state.waiters.append(continuation) }
                return ready
            }
            for continuation in resume { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once `count` handlers have arrived at the gate.
    func waitForArrivals(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.arrived >= count { return true }
                state.arrivalWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func noteCancelled() { state.withLock { $0.cancelled += 1 } }
    var cancelledCount: Int { state.withLock { $0.cancelled } }
}

/// Remembers values handlers saw.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func add(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}

/// A server on 127.0.0.1, port 0, with the test methods.
struct TestServer {
    let server: RPCServer
    let gate = Gate()
    let remaining = Recorder<UInt64>()
    let streamSent = Recorder<Int>()
    /// What `prefetched` saw, in order: "prefetch 1,2" for a batch, "handle 1" for a call
    /// (payloads by their first byte).
    let prefetchLog = Recorder<String>()

    /// `listen`: false for a server reached only in process (nothing binds a port).
    init(
        listen: Bool = true, _ configure: (inout RPCServerConfiguration) -> Void = { _ in },
        extra: (RPCRouter) -> Void = { _ in }
    ) throws {
        var configuration = RPCServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configure(&configuration)
        let router = RPCRouter()
        let gate = self.gate
        let remaining = self.remaining
        let streamSent = self.streamSent
        let prefetchLog = self.prefetchLog
        router.register(TestMethods.echo, .inline { bytes, output in output.append(contentsOf: bytes) })
        router.register(
            TestMethods.prefetched,
            .inline { bytes, output in
                prefetchLog.add("handle \(bytes.first ?? 0)")
                output.append(contentsOf: bytes)
            },
            prefetch: { payloads in
                prefetchLog.add("prefetch " + payloads.map { "\($0.first ?? 0)" }.joined(separator: ","))
            })
        router.register(
            TestMethods.echoAsync,
            .unary { _, bytes in
                // Yield a varying number of times so replies complete out of order.
                for _ in 0..<Int(bytes.first ?? 0) % 7 { await Task.yield() }
                return bytes
            })
        router.register(
            TestMethods.held,
            .unary { _, bytes in
                await withTaskCancellationHandler {
                    await gate.pass()
                } onCancel: {
                    gate.noteCancelled()
                }
                return bytes
            })
        router.register(
            TestMethods.remaining,
            .unary { context, _ in
                let now = context.clock.nanoseconds()
                remaining.add(context.deadline > now ? (context.deadline - now) / 1_000_000 : 0)
                return []
            })
        router.register(
            TestMethods.count,
            .serverStream { _, bytes, writer in
                let total = Int(bytes.first ?? 0) * 10
                for index in 0..<total {
                    try await writer.send([UInt8(truncatingIfNeeded: index)])
                    streamSent.add(index)
                }
            })
        router.register(
            TestMethods.firehose,
            .serverStream { _, _, writer in
                let chunk = [UInt8](repeating: 7, count: 64 * 1024)
                var index = 0
                while true {
                    try await writer.send(chunk)
                    streamSent.add(index)
                    index += 1
                }
            })
        router.inline(TestMethods.health) { (_: HealthRequest) in
            HealthResponse(
                status: .serving, service: "test", version: "t", uptimeMilliseconds: 0, serverTimeMilliseconds: 0,
                connections: 0)
        }
        extra(router)
        server = try RPCServer(configuration: configuration, router: router)
        if listen { try server.start() }
    }

    var endpoint: HostPort { HostPort(host: "127.0.0.1", port: server.port) }

    func client(_ configure: (inout RPCClientConfiguration) -> Void = { _ in }) throws -> RPCClient {
        var configuration = RPCClientConfiguration()
        configure(&configuration)
        return try RPCClient(endpoints: [endpoint], configuration: configuration)
    }
}

/// A decoded reply frame.
struct Reply: Equatable {
    var callID: UInt64
    var kind: FrameKind?
    var code: StatusCode
    var message: String
    var payload: [UInt8]
}

/// A blocking socket that speaks raw frames, for tests that send what a well-behaved client
/// would not. Reads give up after `timeout` seconds.
final class RawConnection: @unchecked Sendable {  // used by one test at a time
    let fd: Int32

    init(port: Int, timeout: Int = 5, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(rc == 0, "connect: \(String(cString: strerror(errno)))")
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// A request frame; with `traceparent`, carrying that text as the envelope's traceparent.
    static func request(
        _ callID: UInt64, _ method: String, payload: [UInt8] = [], timeoutMilliseconds: UInt32 = 0,
        traceparent: String? = nil
    ) -> [UInt8] {
        var out: [UInt8] = []
        method.withCString { name in
            payload.withUnsafeBytes { bytes in
                (traceparent ?? "").withCString { trace in
                    Envelope.appendFrame(
                        to: &out, callID: callID, kind: .request, method: name,
                        traceparent: traceparent == nil ? nil : trace,
                        timeoutMilliseconds: timeoutMilliseconds, payload: bytes)
                }
            }
        }
        return out
    }

    private func readExactly(_ count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, count - offset, 0) }
            if n <= 0 { return nil }
            offset += n
        }
        return buffer
    }

    /// The next reply, or nil when the server closed the connection (or the read timed out).
    /// The blocking read runs on a thread of its own, never on the tasks' thread pool.
    func readReply() async throws -> Reply? {
        try await offThreadPool { try self.readReplyBlocking() }
    }

    private func readReplyBlocking() throws -> Reply? {
        guard let header = readExactly(4) else { return nil }
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard let body = readExactly(length) else { return nil }
        return try body.withUnsafeBytes { raw in
            try Envelope.withDecoded(raw) { view in
                Reply(
                    callID: view.callID, kind: view.kind, code: view.statusCode, message: view.statusText,
                    payload: [UInt8](view.payload))
            }
        }
    }

    /// True when the server has closed the connection: a read returns end of file.
    func isClosedByPeer() async -> Bool {
        let fd = self.fd
        return await offThreadPool {
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, 0) == 0
        }
    }

    func setReadTimeout(milliseconds: Int) {
        var tv = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// Runs blocking work on a dedicated thread so it cannot starve the tasks the server needs.
func offThreadPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.start()
    }
}

func offThreadPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.start()
    }
}
