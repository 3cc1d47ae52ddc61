import CShims
import Foundation
import Glibc
import Sockets
import Wire

/// Thin wrappers over the socket calls the runtime makes; every failure carries errno's text.
enum Socket {
    static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    /// A non-blocking listening socket bound to `address`.
    static func listen(on address: SocketAddress, backlog: Int32 = 1024) throws(RPCError) -> Int32 {
        let fd = socket(
            address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0)
        guard fd >= 0 else { throw RPCError(.unavailable, "socket: \(errorText())") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockAddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let text = errorText()
            close(fd)
            throw RPCError(.unavailable, "cannot listen on \(address): \(text)")
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let text = errorText()
            close(fd)
            throw RPCError(.unavailable, "cannot listen on \(address): \(text)")
        }
        return fd
    }

    /// The local address a socket is bound to.
    static func localAddress(_ fd: Int32) -> SocketAddress? { address(of: fd, getsockname) }

    /// The peer's address.
    static func peerAddress(_ fd: Int32) -> SocketAddress? { address(of: fd, getpeername) }

    private static func address(
        of fd: Int32, _ query: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(fd, $0, &length) }
        }
        return rc == 0 ? SocketAddress(storage: storage, length: length) : nil
    }

    /// Disables Nagle's algorithm: replies leave as soon as they are written.
    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Starts a non-blocking connect. Returns the socket; the connect completes (or fails) when
    /// the socket becomes writable, as `pendingError` then tells.
    static func startConnect(to address: SocketAddress) throws(RPCError) -> Int32 {
        let fd = socket(
            address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0)
        guard fd >= 0 else { throw RPCError(.unavailable, "socket: \(errorText())") }
        setNoDelay(fd)
        let rc = address.withSockAddr { connect(fd, $0, $1) }
        if rc != 0 && errno != EINPROGRESS {
            let text = errorText()
            close(fd)
            throw RPCError(.unavailable, "connect to \(address): \(text)")
        }
        return fd
    }

    /// SO_ERROR: 0 once a non-blocking connect succeeded.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)
        return value
    }
}
