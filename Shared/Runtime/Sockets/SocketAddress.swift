public import Glibc

/// An IPv4 or IPv6 socket address, copied out of getaddrinfo or getpeername.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    /// Copies the first `length` bytes of a socket address.
    public init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// Why a name could not be resolved; `message` reads "cannot resolve HOST: REASON".
    public struct ResolveError: Error, Sendable, CustomStringConvertible {
        public let host: String
        /// The resolver's own words (`gai_strerror`).
        public let reason: String
        public var message: String { "cannot resolve \(host): \(reason)" }
        public var description: String { message }
    }

    /// Resolves `host` (a name or a literal) to every TCP address it has, in resolver order.
    /// With `passive`, an empty host means every local interface (an address to bind).
    public static func resolve(host: String, port: Int, passive: Bool = false) throws(ResolveError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(passive && host.isEmpty ? nil : host, String(port), &hints, &list)
        guard rc == 0 else {
            throw ResolveError(host: host, reason: String(cString: gai_strerror(rc)))
        }
        // getaddrinfo allocated the list; freed once the addresses are copied out.
        defer { freeaddrinfo(list) }
        var result: [SocketAddress] = []
        var cursor = list
        while let entry = cursor {
            var storage = sockaddr_storage()
            let length = entry.pointee.ai_addrlen
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(start: entry.pointee.ai_addr, count: Int(length)))
            }
            let address = SocketAddress(storage: storage, length: length)
            if !result.contains(address) { result.append(address) }
            cursor = entry.pointee.ai_next
        }
        return result
    }

    public var family: Int32 { Int32(storage.ss_family) }

    /// True for an IPv6 address.
    public var isIPv6: Bool { family == AF_INET6 }

    /// The port number.
    public var port: Int {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                return Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
            }
            return Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
        }
    }

    /// `1.2.3.4:80` or `[::1]:80`.
    public var description: String { family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The IP address alone: `1.2.3.4` or `::1`.
    public var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                let offset = MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
                _ = inet_ntop(AF_INET6, raw.baseAddress! + offset, &text, socklen_t(text.count))
            } else {
                let offset = MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
                _ = inet_ntop(AF_INET, raw.baseAddress! + offset, &text, socklen_t(text.count))
            }
        }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Lends the address and its length to `body`, which must not keep the pointer.
    public func withSockAddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: storage) { raw in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        lhs.length == rhs.length
            && withUnsafeBytes(of: lhs.storage) { l in
                withUnsafeBytes(of: rhs.storage) { r in memcmp(l.baseAddress!, r.baseAddress!, Int(lhs.length)) == 0 }
            }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: storage) { raw in
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw[0..<Int(length)]))
        }
    }
}
