import Sockets
import Wire

extension SubctlCommand {
    /// Parses `find VALUE [--reason TEXT] [--entitlement HOST:PORT] --addr HOST:PORT` from the
    /// arguments after `find`.
    static func parseFind(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let scanned = try scan(
            arguments, command: "find", values: connectionOptions.union(["reason", "entitlement"]), flags: ["json"],
            positionals: 1...1, missing: "find needs a VALUE (an account id, a transaction, order or purchase token)")
        let value = scanned.positionals[0]
        guard FindRequest.Limits.value.admits(value) else {
            throw SubctlError(.usage, FindRequest.Limits.value.requirement)
        }
        if let reason = scanned.values["reason"], !FindRequest.Limits.reason.admits(reason) {
            throw SubctlError(.usage, FindRequest.Limits.reason.requirement)
        }
        let options = try options(scanned, command: "find", streaming: false)
        var entitlement: CallOptions?
        if let text = scanned.values["entitlement"] {
            guard let address = HostPort(parsing: text), address.port > 0 else {
                throw SubctlError(.usage, "--entitlement expects HOST:PORT with a port 1...65535, got \"\(text)\"")
            }
            entitlement = options
            entitlement?.address = address
        }
        return .find(
            FindCommand(
                request: FindRequest(value: value, reason: scanned.values["reason"]), entitlement: entitlement),
            options: options)
    }
}
