public import Foundation
import Glibc

/// A loopback port held by a bound socket that never listens: a connection to it is refused,
/// and no other socket of the test run can take the port while it is held (a port closed and
/// given back could be, by another test's server). Released when the value goes away.
public final class HeldPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else {
            if fd >= 0 { close(fd) }
            throw POSIXError(.EADDRNOTAVAIL)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:<port>`.
    public var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    deinit { close(fd) }
}
