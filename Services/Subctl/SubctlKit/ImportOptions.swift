/// `subctl import FILE …`: what to import, how fast, and where progress and the report go.
public struct ImportOptions: Sendable, Equatable {
    /// The default `--rate`: subscriptions a second.
    public static let defaultRate = 10.0
    /// The default `--concurrency`: calls in flight.
    public static let defaultConcurrency = 8

    /// The import file (RevenueCat export, CSV or JSON lines).
    public var path: String
    /// Subscriptions a second at most (`--rate`).
    public var rate: Double
    /// Calls to the verifier in flight at most (`--concurrency`), 1 to 64.
    public var concurrency: Int
    /// `--dry-run`: read and count, call nothing, write no progress.
    public var dryRun: Bool
    /// `--progress`, or `FILE.progress`.
    public var progressPath: String
    /// `--report-json`.
    public var reportJSONPath: String?
    /// `--account-from`.
    public var accountSource: ImportFile.AccountSource
    /// `--reason`, or `import FILE row N` for each subscription.
    public var reason: String?
    /// The verifier; nil for a dry run without `--addr`.
    public var call: CallOptions?

    public init(
        path: String, rate: Double = Self.defaultRate, concurrency: Int = Self.defaultConcurrency, dryRun: Bool = false,
        progressPath: String? = nil,
        reportJSONPath: String? = nil, accountSource: ImportFile.AccountSource = .original, reason: String? = nil,
        call: CallOptions?
    ) {
        self.path = path
        self.rate = rate
        self.concurrency = concurrency
        self.dryRun = dryRun
        self.progressPath = progressPath ?? ImportProgress.defaultPath(for: path)
        self.reportJSONPath = reportJSONPath
        self.accountSource = accountSource
        self.reason = reason
        self.call = call
    }
}

extension SubctlCommand {
    /// Parses `import FILE …`. Throws `usage` for a malformed command line; reads no file.
    static func parseImport(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let scanned = try scan(
            arguments, command: "import",
            values: connectionOptions.union([
                "rate", "concurrency", "progress", "report-json", "account-from", "reason",
            ]),
            flags: ["dry-run"], positionals: 1...1, missing: "import needs a FILE")
        let dryRun = scanned.flags.contains("dry-run")
        var rate = ImportOptions.defaultRate
        if let text = scanned.values["rate"] {
            guard let number = Double(text), number > 0, number <= 1000 else {
                throw SubctlError(
                    .usage, "--rate expects subscriptions a second, more than 0 and at most 1000, got \"\(text)\"")
            }
            rate = number
        }
        var concurrency = ImportOptions.defaultConcurrency
        if let text = scanned.values["concurrency"] {
            guard let number = Int(text), (1...64).contains(number) else {
                throw SubctlError(.usage, "--concurrency expects calls in flight, 1 to 64, got \"\(text)\"")
            }
            concurrency = number
        }
        var source = ImportFile.AccountSource.original
        if let text = scanned.values["account-from"] {
            guard let parsed = ImportFile.AccountSource(rawValue: text) else {
                throw SubctlError(.usage, "--account-from expects original or last-seen, got \"\(text)\"")
            }
            source = parsed
        }
        if let reason = scanned.values["reason"], reason.isEmpty || reason.utf8.count > 400 {
            throw SubctlError(.usage, "--reason expects 1 to 400 bytes (the row is added to it)")
        }
        for name in ["progress", "report-json"] where scanned.values[name]?.isEmpty == true {
            throw SubctlError(.usage, "--\(name) expects a FILE")
        }
        let call: CallOptions? =
            dryRun && scanned.values["addr"] == nil
            ? nil : try options(scanned, command: "import", streaming: false)
        return .importFile(
            ImportOptions(
                path: scanned.positionals[0], rate: rate, concurrency: concurrency, dryRun: dryRun,
                progressPath: scanned.values["progress"],
                reportJSONPath: scanned.values["report-json"], accountSource: source, reason: scanned.values["reason"],
                call: call))
    }
}
