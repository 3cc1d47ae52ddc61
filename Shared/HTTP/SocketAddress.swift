import Glibc

/// One IPv4 or IPv6 address to bind, copied out of `getaddrinfo`'s list.
struct SocketAddress: CustomStringConvertible {
    private var storage = sockaddr_storage()

    /// Whether this is an IPv6 address (bound dual-stack).
    var isIPv6: Bool { storage.ss_family == sa_family_t(AF_INET6) }

    /// The addresses `host` (a literal or a name; empty for all interfaces) resolves to, with `port`.
    static func resolve(host: String, port: Int) throws(HTTPServerError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &list)
        guard status == 0 else {
            throw HTTPServerError(
                .invalidAddress, "cannot resolve host \"\(host)\": \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }  // Each address is copied out below.
        var addresses: [SocketAddress] = []
        for entry in sequence(first: list, next: { $0?.pointee.ai_next }) {
            guard let info = entry?.pointee, let source = info.ai_addr,
                info.ai_family == AF_INET || info.ai_family == AF_INET6
            else { continue }
            var address = SocketAddress()
            withUnsafeMutableBytes(of: &address.storage) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(start: source, count: Int(info.ai_addrlen)))
            }
            addresses.append(address)
        }
        guard !addresses.isEmpty else {
            throw HTTPServerError(.invalidAddress, "cannot resolve host \"\(host)\": no IPv4 or IPv6 address")
        }
        return addresses
    }

    /// Lends the address as a `sockaddr` to `body`, which must not keep the pointer.
    func withUnsafeSockAddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    /// `127.0.0.1:8080` or `[::1]:8080`.
    var description: String {
        var host = [CChar](repeating: 0, count: 64)
        var port = [CChar](repeating: 0, count: 8)
        let status = withUnsafeSockAddr { address in
            getnameinfo(
                address, socklen_t(MemoryLayout<sockaddr_storage>.size), &host, socklen_t(host.count), &port,
                socklen_t(port.count), NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard status == 0 else { return "unknown address" }
        let name = String(decoding: host.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
        let service = String(decoding: port.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
        return isIPv6 ? "[\(name)]:\(service)" : "\(name):\(service)"
    }
}
