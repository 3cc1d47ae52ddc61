public import Foundation
public import Sockets

/// Reads typed settings from environment variables, each with a default. Every getter throws a
/// `ConfigError` naming the variable when the value is present but unusable.
public struct EnvironmentReader: Sendable {
    private let values: [String: String]

    /// Reads the process environment.
    public init() { values = ProcessInfo.processInfo.environment }

    /// Reads the given variables instead of the process environment (tests).
    public init(_ values: [String: String]) { self.values = values }

    /// The raw value, or nil when unset or empty.
    public func raw(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    public func string(_ name: String, default fallback: String) -> String { raw(name) ?? fallback }

    public func optionalString(_ name: String) -> String? { raw(name) }

    /// An `http` or `https` URL with a host.
    public func httpURL(_ name: String, default fallback: String) throws(ConfigError) -> URL {
        let text = raw(name) ?? fallback
        guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw ConfigError(variable: name, problem: "\"\(text)\" is not an http(s) URL")
        }
        return url
    }

    /// An integer within `range`.
    public func int(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws(ConfigError) -> Int {
        guard let text = raw(name) else { return fallback }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw ConfigError(variable: name, problem: "expected an integer, got \"\(text)\"")
        }
        guard range.contains(value) else {
            throw ConfigError(
                variable: name, problem: "\(value) is out of range \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`.
    public func bool(_ name: String, default fallback: Bool) throws(ConfigError) -> Bool {
        guard let text = raw(name) else { return fallback }
        switch text.lowercased() {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw ConfigError(variable: name, problem: "expected true or false, got \"\(text)\"")
        }
    }

    /// A duration such as `250ms`, `30s`, `5m` or `1h`; a bare number means milliseconds.
    public func duration(_ name: String, default fallback: Duration, range: ClosedRange<Duration>) throws(ConfigError)
        -> Duration
    {
        guard let text = raw(name) else { return fallback }
        guard let value = Self.parseDuration(text) else {
            throw ConfigError(
                variable: name, problem: "expected a duration such as 250ms, 30s, 5m or 1h, got \"\(text)\"")
        }
        guard range.contains(value) else {
            throw ConfigError(
                variable: name, problem: "\(text) is out of range \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// A `host:port` (`[v6]:port` for IPv6) listening address; port 0 asks the system for one.
    public func address(_ name: String, default fallback: String) throws(ConfigError) -> HostPort {
        let text = raw(name) ?? fallback
        guard let address = HostPort(parsing: text) else {
            throw ConfigError(variable: name, problem: "expected host:port with a port 0...65535, got \"\(text)\"")
        }
        return address
    }

    /// A comma-separated list of `host:port` addresses, at least one.
    public func addresses(_ name: String, default fallback: String) throws(ConfigError) -> [HostPort] {
        let text = raw(name) ?? fallback
        var result: [HostPort] = []
        for part in text.split(separator: ",") {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard let address = HostPort(parsing: trimmed), address.port != 0 else {
                throw ConfigError(variable: name, problem: "expected host:port[,host:port...], got \"\(trimmed)\"")
            }
            result.append(address)
        }
        guard !result.isEmpty else { throw ConfigError(variable: name, problem: "needs at least one host:port") }
        return result
    }

    /// One of `choices`.
    public func choice(_ name: String, default fallback: String, choices: [String]) throws(ConfigError) -> String {
        guard let text = raw(name) else { return fallback }
        guard choices.contains(text) else {
            throw ConfigError(
                variable: name, problem: "expected one of \(choices.joined(separator: ", ")), got \"\(text)\"")
        }
        return text
    }

    /// A path to a file that exists and can be read. The error names the variable and the path.
    public func readableFile(_ name: String) throws(ConfigError) -> String? {
        guard let path = raw(name) else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigError(variable: name, problem: "file \(path) does not exist or cannot be read")
        }
        return path
    }

    static func parseDuration(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
        for (suffix, millis) in units where trimmed.hasSuffix(suffix) {
            guard let number = Int64(trimmed.dropLast(suffix.count)), number >= 0 else { return nil }
            let (total, overflow) = number.multipliedReportingOverflow(by: millis)
            return overflow ? nil : .milliseconds(total)
        }
        guard let number = Int64(trimmed), number >= 0 else { return nil }
        return .milliseconds(number)
    }
}
