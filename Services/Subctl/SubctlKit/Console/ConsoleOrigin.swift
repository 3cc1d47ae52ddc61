/// An origin the console is served under besides its listen address (`--origin`), as a browser
/// names it: `scheme://host[:port]`, lowercased, with no path. Behind a proxy that terminates
/// TLS the browser's `Origin` is the proxy's `https://…` and its `Host` the proxy's host.
public struct ConsoleOrigin: Sendable, Equatable {
    /// `http://host:port` or `https://host`, as browsers send it in `Origin`.
    public let origin: String
    /// What the browser sends in `Host`: the host, with the port when it is not the scheme's.
    public let host: String

    /// Nil unless `text` is `http://` or `https://`, a host of letters, digits, `.`, `-` (or an
    /// IPv4 address), an optional port 1...65535, and nothing after but an optional `/`.
    public init?(parsing text: String) {
        var rest = Substring(text.lowercased())
        let scheme: String
        if rest.hasPrefix("https://") {
            scheme = "https"
        } else if rest.hasPrefix("http://") {
            scheme = "http"
        } else {
            return nil
        }
        rest = rest.dropFirst(scheme.count + 3)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = parts[0]
        guard !name.isEmpty, name.count <= 253,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") })
        else { return nil }
        var port: Int?
        if parts.count == 2 {
            guard let number = Int(parts[1]), (1...65535).contains(number), String(number) == parts[1] else {
                return nil
            }
            port = number
        }
        let implied = scheme == "https" ? 443 : 80
        host = port.map { $0 == implied ? String(name) : "\(name):\($0)" } ?? String(name)
        origin = "\(scheme)://\(host)"
    }
}
