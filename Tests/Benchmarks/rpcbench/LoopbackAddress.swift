import Glibc

/// IPv4 loopback socket addresses: the only place this benchmark sends traffic.
enum LoopbackAddress {
    /// 127.0.0.1:`port`.
    static func make(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        return address
    }
}
