import Foundation
import Sockets

extension SubctlCommand {
    /// Parses `console --listen HOST:PORT [--ledger H:P] [--verifier H:P] [--entitlement H:P]
    /// [--tls-cert F --tls-key F --tls-ca F] [--timeout D] [--apple-root PEM]... [--no-login]
    /// [--origin URL]`.
    static func parseConsole(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let scanned = try scan(
            arguments, command: "console",
            values: [
                "listen", "ledger", "verifier", "entitlement", "timeout", "tls-cert", "tls-key", "tls-ca", "apple-root",
                "origin",
            ],
            repeatable: ["apple-root"], flags: ["no-login"], positionals: 0...0)
        guard let listenText = scanned.values["listen"] else {
            throw SubctlError(.usage, "console needs --listen HOST:PORT (port 0 picks a free one)")
        }
        guard let listen = HostPort(parsing: listenText), (0...65535).contains(listen.port) else {
            throw SubctlError(.usage, "--listen expects HOST:PORT with a port 0...65535, got \"\(listenText)\"")
        }
        var origin: ConsoleOrigin?
        if let text = scanned.values["origin"] {
            guard let parsed = ConsoleOrigin(parsing: text) else {
                throw SubctlError(
                    .usage,
                    "--origin expects the address the console is served under, http[s]://HOST[:PORT] with no path, got \"\(text)\""
                )
            }
            origin = parsed
        }
        func service(_ name: String, _ fallback: HostPort) throws(SubctlError) -> CallOptions {
            var values = scanned
            values.values["addr"] = scanned.values[name] ?? fallback.description
            do throws(SubctlError) {
                return try options(values, command: "console", streaming: false)
            } catch {
                throw SubctlError(.usage, error.message.replacingOccurrences(of: "--addr", with: "--\(name)"))
            }
        }
        return .console(
            ConsoleOptions(
                listen: listen, ledger: try service("ledger", ConsoleOptions.defaultLedger),
                verifier: try service("verifier", ConsoleOptions.defaultVerifier),
                entitlement: try service("entitlement", ConsoleOptions.defaultEntitlement),
                appleRoots: scanned.repeated["apple-root"] ?? [], login: !scanned.flags.contains("no-login"),
                origin: origin))
    }
}
