import CShims
import Foundation
import Glibc

/// Reads a service's Prometheus text over plain HTTP/1.0 on loopback, and single samples from it.
public enum MetricsScrape {
    /// The body of `GET path` on 127.0.0.1:`port`. Throws when the connection fails, the answer
    /// is not 200, or it takes over five seconds.
    public static func get(port: Int, path: String) throws(BenchError) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            throw BenchError("cannot connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count
        else { throw BenchError("cannot send the request for \(path)") }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw BenchError("reading \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            response += chunk[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200") || text.hasPrefix("HTTP/1.0 200"),
            let split = text.range(of: "\r\n\r\n")
        else { throw BenchError("GET \(path) did not answer 200: \(text.prefix(200))") }
        return String(text[split.upperBound...])
    }

    /// The value of the unlabelled sample `name` in Prometheus text.
    public static func value(_ name: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }
}
