import Model
import Wire

extension SubctlCommand {
    /// The `apple` subcommands that act at the App Store through the verifier.
    static let appleOperations: Set<String> = ["extend", "set-token", "refunds"]

    /// Parses `apple extend|set-token|refunds …` (the subcommand first). Throws `usage` for a
    /// malformed command line.
    static func parseAppleOperation(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let subcommand = arguments[0]
        let common = connectionOptions.union(["reason", "env"])
        let operation: AppleOperation
        let scanned: Scanned
        switch subcommand {
        case "extend":
            scanned = try scan(
                Array(arguments.dropFirst()), command: "apple extend",
                values: common.union(["days", "reason-code", "request-id"]), flags: ["json"], positionals: 1...1,
                missing: "apple extend needs an ORIGINAL_TRANSACTION_ID")
            guard let text = scanned.values["days"], let days = Int32(text), (1...90).contains(days) else {
                throw SubctlError(.usage, "apple extend needs --days N (1...90)")
            }
            var reasonCode: Int32 = 0
            if let text = scanned.values["reason-code"] {
                guard let code = Int32(text), (0...3).contains(code) else {
                    throw SubctlError(.usage, "--reason-code expects 0, 1, 2 or 3 (Apple's extendReasonCode)")
                }
                reasonCode = code
            }
            operation = .extend(
                ExtendAppleRenewalDateRequest(
                    originalTransactionID: scanned.positionals[0], environment: try appleEnvironment(scanned),
                    days: days, reasonCode: reasonCode, requestID: scanned.values["request-id"] ?? "",
                    reason: try reason(scanned, "apple extend")))
        case "set-token":
            scanned = try scan(
                Array(arguments.dropFirst()), command: "apple set-token", values: common.union(["account"]),
                flags: ["json"], positionals: 1...1, missing: "apple set-token needs an ORIGINAL_TRANSACTION_ID")
            guard let account = scanned.values["account"], !account.isEmpty else {
                throw SubctlError(.usage, "apple set-token needs --account ACCOUNT_ID")
            }
            operation = .setToken(
                SetAppleAppAccountTokenRequest(
                    originalTransactionID: scanned.positionals[0], environment: try appleEnvironment(scanned),
                    accountID: account, reason: try reason(scanned, "apple set-token")))
        default:
            scanned = try scan(
                Array(arguments.dropFirst()), command: "apple refunds", values: common, flags: ["json"],
                positionals: 1...1, missing: "apple refunds needs a TRANSACTION_ID")
            operation = .refunds(
                GetAppleRefundHistoryRequest(
                    transactionID: scanned.positionals[0], environment: try appleEnvironment(scanned),
                    reason: try reason(scanned, "apple refunds")))
        }
        return .appleOperation(
            operation, options: try options(scanned, command: "apple \(subcommand)", streaming: false))
    }

    /// `--reason TEXT`, which every operation needs.
    private static func reason(_ scanned: Scanned, _ command: String) throws(SubctlError) -> String {
        guard let reason = scanned.values["reason"], !reason.isEmpty else {
            throw SubctlError(.usage, "\(command) needs --reason TEXT (kept in the audit trail)")
        }
        return reason
    }

    /// `--env production|sandbox`, or nil: the verifier's configured environment.
    private static func appleEnvironment(_ scanned: Scanned) throws(SubctlError) -> StoreEnvironment? {
        guard let text = scanned.values["env"] else { return nil }
        guard let environment = StoreEnvironment.allCases.first(where: { $0.description == text.lowercased() })
        else {
            throw SubctlError(.usage, "--env expects production or sandbox, got \"\(text)\"")
        }
        return environment
    }
}
