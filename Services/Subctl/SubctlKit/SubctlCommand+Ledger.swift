import Model
import Observability
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
        case "trace":
            scanned = try scan(
                arguments, command: command, values: connectionOptions, flags: ["json"], positionals: 1...1,
                missing: "trace needs a TRACE_ID")
            guard TraceContext.isTraceID(scanned.positionals[0]) else {
                throw SubctlError(
                    .usage,
                    "trace expects a TRACE_ID of 32 lowercase hex digits, not all zero, got \"\(scanned.positionals[0])\""
                )
            }
            ledger = .trace(traceID: scanned.positionals[0])
        default:
            let missing = "replay needs STORE and NOTIFICATION_ID"
            scanned = try scan(
                arguments, command: command, values: connectionOptions.union(["reason"]), flags: ["json"],
                positionals: 2...2, missing: missing)
            guard !scanned.positionals[1].isEmpty else { throw SubctlError(.usage, missing) }
            ledger = .replay(
                try store(scanned.positionals[0], "STORE"), notificationID: scanned.positionals[1],
                reason: scanned.values["reason"])
        }
        return .ledger(ledger, options: try options(scanned, command: command, streaming: false))
    }

    /// Parses `events list|tail|dead|test|replay|verify` from the arguments after `events`.
    static func parseEvents(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        guard let verb = arguments.first else {
            throw SubctlError(.usage, "events needs list, tail, dead, replay, test or verify")
        }
        let rest = Array(arguments.dropFirst())
        let scanned: Scanned
        let ledger: LedgerCommand
        func number(_ name: String, _ scanned: Scanned, _ what: String = "a sequence number") throws(SubctlError)
            -> UInt64
        {
            guard let text = scanned.values[name] else { return 0 }
            guard let value = UInt64(text) else {
                throw SubctlError(.usage, "--\(name) expects \(what), got \"\(text)\"")
            }
            return value
        }
        func types(_ scanned: Scanned) throws(SubctlError) -> [String] {
            let list = (scanned.values["types"] ?? "").split(separator: ",").map(String.init)
            if let bad = list.first(where: { !EventType.isValidPattern($0) }) {
                throw SubctlError(.usage, "--types: \"\(bad)\" is not an event type or a prefix with .*")
            }
            return list
        }
        switch verb {
        case "list":
            scanned = try scan(
                rest, command: "events list", values: connectionOptions.union(["after", "limit", "types"]),
                flags: ["json"], positionals: 0...0)
            ledger = .events(
                after: try number("after", scanned), limit: try pageSize(scanned, "limit", max: 1000),
                types: try types(scanned))
        case "tail":
            scanned = try scan(
                rest, command: "events tail", values: connectionOptions.union(["after", "types", "count"]),
                flags: ["json"], positionals: 0...0)
            let count = try scanned.values["count"].map { text throws(SubctlError) -> Int in
                guard let count = Int(text), count > 0 else {
                    throw SubctlError(.usage, "--count expects a positive number, got \"\(text)\"")
                }
                return count
            }
            ledger = .tail(after: try number("after", scanned), types: try types(scanned), count: count)
        case "dead":
            scanned = try scan(
                rest, command: "events dead", values: connectionOptions.union(["endpoint", "limit"]),
                flags: ["json", "all"],
                positionals: 0...0)
            ledger = .deadLetters(
                endpoint: scanned.values["endpoint"], limit: try pageSize(scanned, "limit", max: 500),
                all: scanned.flags.contains("all"))
        case "test":
            scanned = try scan(
                rest, command: "events test", values: connectionOptions.union(["account"]), flags: ["json"],
                positionals: 0...0)
            ledger = .testEvent(account: scanned.values["account"])
        case "replay":
            scanned = try scan(
                rest, command: "events replay",
                values: connectionOptions.union(["endpoint", "from", "sequence", "reason"]), flags: ["json"],
                positionals: 0...0)
            guard let endpoint = scanned.values["endpoint"],
                (scanned.values["from"] == nil) != (scanned.values["sequence"] == nil)
            else {
                throw SubctlError(
                    .usage, "events replay needs --endpoint NAME and one of --from SEQUENCE and --sequence SEQUENCE")
            }
            ledger = .replayDeliveries(
                endpoint: endpoint, after: try number("from", scanned),
                sequence: scanned.values["sequence"] == nil ? nil : try number("sequence", scanned),
                reason: scanned.values["reason"])
        case "verify":
            scanned = try scan(
                rest, command: "events verify", values: connectionOptions.union(["from"]), flags: [],
                positionals: 0...0)
            ledger = .verifyEvents(
                from: scanned.values["from"] == nil ? nil : try number("from", scanned, "a feed position"))
        default:
            throw SubctlError(.usage, "events needs list, tail, dead, replay, test or verify, got \"\(verb)\"")
        }
        return .ledger(ledger, options: try options(scanned, command: "events \(verb)", streaming: verb == "tail"))
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

    /// `--page-size` (or another option), 1...`max`; 0 (the server's default) when not given.
    private static func pageSize(_ scanned: Scanned, _ name: String = "page-size", max: UInt32 = 500)
        throws(SubctlError) -> UInt32
    {
        guard let text = scanned.values[name] else { return 0 }
        guard let size = UInt32(text), (1...max).contains(size) else {
            throw SubctlError(.usage, "--\(name) expects a number 1...\(max), got \"\(text)\"")
        }
        return size
    }
}
