import Config
import Foundation
import RPC
import ServiceRuntime
import Testing

@Suite("RPC_READ_ONLY")
struct ReadOnlySettingTests {
    /// TLS_CERT, TLS_KEY and TLS_CA as readable files (the settings read only their paths).
    static func tlsEnvironment() throws -> [String: String] {
        let folder = NSTemporaryDirectory() + "read-only-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var environment: [String: String] = [:]
        for name in ["TLS_CERT", "TLS_KEY", "TLS_CA"] {
            let path = folder + "/" + name.lowercased() + ".pem"
            try Data("-----BEGIN TEST-----\n".utf8).write(to: URL(fileURLWithPath: path))
            environment[name] = path
        }
        return environment
    }

    static func settings(_ environment: [String: String]) throws -> HostSettings {
        try HostSettings(
            environment: EnvironmentReader(environment), defaultRPC: "127.0.0.1:0", defaultHTTP: "127.0.0.1:0")
    }

    @Test("a comma-separated list of identities, spaces around them ignored, gives them the read-only role")
    func parsed() throws {
        var environment = try Self.tlsEnvironment()
        environment["RPC_READ_ONLY"] = "support, support-key,oncall"
        #expect(try Self.settings(environment).server.readOnlyIdentities == ["support", "support-key", "oncall"])
        environment["RPC_READ_ONLY"] = nil
        #expect(try Self.settings(environment).server.readOnlyIdentities.isEmpty)
    }

    @Test("an empty item is refused", arguments: ["support,", ",support", " ", "support,,oncall", "support, ,oncall"])
    func emptyItem(value: String) throws {
        var environment = try Self.tlsEnvironment()
        environment["RPC_READ_ONLY"] = value
        #expect(
            throws: ConfigError(
                variable: "RPC_READ_ONLY",
                problem: "expected identities separated by commas, with none empty, got \"\(value)\"")
        ) { _ = try Self.settings(environment) }
    }

    @Test("without mutual TLS the start is refused, naming the setting")
    func needsTLS() throws {
        #expect(
            throws: ConfigError(
                variable: "RPC_READ_ONLY",
                problem: "needs mutual TLS (TLS_CERT, TLS_KEY, TLS_CA): plaintext callers have no identity")
        ) { _ = try Self.settings(["RPC_READ_ONLY": "support"]) }
    }
}
