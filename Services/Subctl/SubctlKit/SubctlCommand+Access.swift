extension SubctlCommand {
    /// Parses `access timeline ACCOUNT_ID [--capability NAME] [--from TIME] [--to TIME]` from
    /// the arguments after `access`.
    static func parseAccess(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        guard let verb = arguments.first else { throw SubctlError(.usage, "access needs timeline") }
        guard verb == "timeline" else { throw SubctlError(.usage, "access needs timeline, got \"\(verb)\"") }
        let scanned = try scan(
            Array(arguments.dropFirst()), command: "access timeline",
            values: connectionOptions.union(["capability", "from", "to"]), flags: ["json"], positionals: 1...1,
            missing: "access timeline needs an ACCOUNT_ID")
        guard !scanned.positionals[0].isEmpty else {
            throw SubctlError(.usage, "access timeline needs an ACCOUNT_ID")
        }
        func instant(_ name: String) throws(SubctlError) -> Int64? {
            guard let text = scanned.values[name] else { return nil }
            guard let value = AccessCommand.instant(text) else {
                throw SubctlError(
                    .usage,
                    "--\(name) expects epoch milliseconds, a date (2026-01-31) or a UTC time (2026-01-31T12:00:00Z), got \"\(text)\""
                )
            }
            return value
        }
        let from = try instant("from")
        let to = try instant("to")
        if let from, let to, to <= from {
            throw SubctlError(.usage, "--to must be after --from")
        }
        return .access(
            .timeline(account: scanned.positionals[0], capability: scanned.values["capability"], from: from, to: to),
            options: try options(scanned, command: "access timeline", streaming: false))
    }
}
