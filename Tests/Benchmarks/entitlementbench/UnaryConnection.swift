import BenchSupport
import Glibc
import Wire

/// One blocking TCP_NODELAY connection to a service on 127.0.0.1, making one unary call at a
/// time: a request frame out, its reply frame back. For the propagation probe, where each call
/// must leave the moment the previous answer arrived.
final class UnaryConnection {
    private let fd: Int32
    private let port: Int
    private var nextCallID: UInt64 = 0
    private var frame: [UInt8] = []
    private var reply: [UInt8] = []

    /// Connects to 127.0.0.1:`port`. Throws when the socket cannot be set up.
    init(port: Int) throws(BenchError) {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(Self.errorText())") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        var one: Int32 = 1
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        guard connected,
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0,
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0
        else {
            let text = Self.errorText()
            close(fd)
            throw BenchError("cannot connect to 127.0.0.1:\(port): \(text)")
        }
    }

    deinit { close(fd) }

    /// Calls `method` with `payload` and hands the reply's payload to `body`. Throws when the
    /// call fails (a status, naming it), the connection breaks, or no answer comes within 10 s.
    func call<T>(_ method: String, _ payload: [UInt8], _ body: (UnsafeRawBufferPointer) throws(BenchError) -> T)
        throws(BenchError) -> T
    {
        nextCallID += 1
        let id = nextCallID
        frame.removeAll(keepingCapacity: true)
        method.withCString { name in
            payload.withUnsafeBytes { bytes in
                Envelope.appendFrame(to: &frame, callID: id, kind: .request, method: name, payload: bytes)
            }
        }
        try writeAll(frame)
        var header = [UInt8](repeating: 0, count: 4)
        try readExactly(&header, count: 4)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length > 0 && length <= 1 << 20 else { throw BenchError("reply frame length \(length) from \(method)") }
        if reply.count < length { reply = [UInt8](repeating: 0, count: length) }
        try readExactly(&reply, count: length)
        let outcome: Result<T, BenchError>
        do {
            outcome = try reply.withUnsafeBytes { all in
                try Envelope.withDecoded(UnsafeRawBufferPointer(rebasing: all[0..<length])) { view in
                    guard view.callID == id, view.kind == .response else {
                        return .failure(BenchError("\(method): a reply for call \(view.callID), not \(id)"))
                    }
                    guard view.statusCode == .ok else {
                        return .failure(BenchError("\(method) failed: \(view.statusCode): \(view.statusText)"))
                    }
                    do throws(BenchError) {
                        return .success(try body(view.payload))
                    } catch {
                        return .failure(error)
                    }
                }
            }
        } catch {
            throw BenchError("\(method): the reply does not decode: \(error)")
        }
        return try outcome.get()
    }

    private func writeAll(_ bytes: [UInt8]) throws(BenchError) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw BenchError("write to 127.0.0.1:\(port): \(Self.errorText())") }
            written += count
        }
    }

    private func readExactly(_ buffer: inout [UInt8], count: Int) throws(BenchError) {
        var filled = 0
        while filled < count {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + filled, count - filled, 0) }
            if got < 0 && errno == EINTR { continue }
            if got == 0 { throw BenchError("127.0.0.1:\(port) closed the connection") }
            guard got > 0 else { throw BenchError("read from 127.0.0.1:\(port): \(Self.errorText())") }
            filled += got
        }
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
