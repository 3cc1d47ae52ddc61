public import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the tests and the demo read from the services beside their RPCs.
public enum ServiceFiles {
    /// The `NAME=value` lines of an environment file (storesim's `verifier.env`), later lines
    /// winning; lines without `=` are skipped.
    public static func environment(at url: URL) throws -> [String: String] {
        var settings: [String: String] = [:]
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { settings[parts[0]] = parts[1] }
        }
        return settings
    }

    /// The value of the unlabelled sample `name` on a service's `/metrics`; nil when the page
    /// cannot be read or has no such sample.
    public static func metric(_ name: String, httpPort: Int) async -> Double? {
        guard let url = URL(string: "http://127.0.0.1:\(httpPort)/metrics"),
            let (data, _) = try? await loopbackExchange(URLRequest(url: url))
        else { return nil }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }
    }
}
