import Model
import Wire

extension SubctlCommand {
    /// Parses `account`, `history`, `inbox` or `replay` from the arguments after the command
    /// name. Throws `usage` for a malformed command line.
    static func parseLedger(_ command: String, _ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let scanned: Scanned
        let ledger: LedgerCommand
        switch command {
        case "account":
            scanned = try scan(
                arguments, command: command, values: connectionOptions, flags: ["json"], positionals: 1...1,
                missing: "account needs an ACCOUNT_ID")
            guard !scanned.positionals[0].isEmpty else { throw SubctlError(.usage, "account needs an ACCOUNT_ID") }
            ledger = .account(scanned.positionals[0])
        case "history":
            scanned = try scan(
                arguments, command: command, values: connectionOptions.union(["account", "key", "page-size"]),
                flags: ["json", "all"], positionals: 0...0)
            let subject: LedgerCommand.HistorySubject
            switch (scanned.values["account"], scanned.values["key"]) {
            case (let account?, nil) where !account.isEmpty: subject = .account(account)
            case (nil, let key?): subject = .key(try subscriptionKey(key))
            case (_?, _?): throw SubctlError(.usage, "history takes --account or --key, not both")
            default: throw SubctlError(.usage, "history needs --account ACCOUNT_ID or --key STORE/ENV/STORE_ID")
            }
            ledger = .history(subject, pageSize: try pageSize(scanned), all: scanned.flags.contains("all"))
        case "inbox":
            scanned = try scan(
                arguments, command: command, values: connectionOptions.union(["status", "store", "page-size"]),
                flags: ["json"], positionals: 0...0)
            var status: InboxStatus?
            if let text = scanned.values["status"] {
                status = InboxStatus.allCases.first { $0.description == text }
                guard status != nil else {
                    throw SubctlError(
                        .usage, "--status expects pending, failed, processed or rejected, got \"\(text)\"")
                }
            }
            let store = try scanned.values["store"].map { text throws(SubctlError) in try self.store(text, "--store") }
            ledger = .inbox(status: status, store: store, pageSize: try pageSize(scanned))
        default:
            let missing = "replay needs STORE and NOTIFICATION_ID"
            scanned = try scan(
                arguments, command: command, values: connectionOptions, flags: ["json"], positionals: 2...2,
                missing: missing)
            guard !scanned.positionals[1].isEmpty else { throw SubctlError(.usage, missing) }
            ledger = .replay(try store(scanned.positionals[0], "STORE"), notificationID: scanned.positionals[1])
        }
        return .ledger(ledger, options: try options(scanned, command: command, streaming: false))
    }

    /// `STORE/ENV/STORE_ID`, e.g. `apple/production/2000000123456789`.
    static func subscriptionKey(_ text: String) throws(SubctlError) -> SubscriptionKey {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[2].isEmpty else {
            throw SubctlError(
                .usage, "--key expects STORE/ENV/STORE_ID such as apple/production/2000001, got \"\(text)\"")
        }
        let store = try store(parts[0], "the STORE of --key")
        guard let environment = StoreEnvironment.allCases.first(where: { $0.description == parts[1] }) else {
            throw SubctlError(.usage, "the ENV of --key expects production or sandbox, got \"\(parts[1])\"")
        }
        return SubscriptionKey(store: store, environment: environment, storeID: parts[2])
    }

    private static func store(_ text: String, _ what: String) throws(SubctlError) -> Store {
        guard let store = Store.allCases.first(where: { $0.description == text }) else {
            throw SubctlError(.usage, "\(what) expects apple or google, got \"\(text)\"")
        }
        return store
    }

    /// `--page-size`, 1...500; 0 (the server's default) when not given.
    private static func pageSize(_ scanned: Scanned) throws(SubctlError) -> UInt32 {
        guard let text = scanned.values["page-size"] else { return 0 }
        guard let size = UInt32(text), (1...500).contains(size) else {
            throw SubctlError(.usage, "--page-size expects a number 1...500, got \"\(text)\"")
        }
        return size
    }
}
