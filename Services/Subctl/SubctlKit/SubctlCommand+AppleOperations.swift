import Foundation
import Model
import Wire

extension SubctlCommand {
    /// The `apple` subcommands that act at the App Store through the verifier.
    static let appleOperations: Set<String> = ["extend", "extend-status", "set-token", "refunds", "consumption"]

    /// Parses `apple extend|extend-status|set-token|refunds|consumption …` (the subcommand first). Throws `usage` for a
    /// malformed command line.
    static func parseAppleOperation(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let subcommand = arguments[0]
        let common = connectionOptions.union(["reason", "env"])
        let operation: AppleOperation
        let scanned: Scanned
        switch subcommand {
        case "extend" where arguments.contains("--all"):
            scanned = try scan(
                Array(arguments.dropFirst()), command: "apple extend --all",
                values: common.union(["days", "reason-code", "request-id", "product", "storefront", "every"]),
                flags: ["json", "all", "no-wait"], positionals: 0...0)
            guard let product = scanned.values["product"], !product.isEmpty else {
                throw SubctlError(.usage, "apple extend --all needs --product PRODUCT_ID")
            }
            let (days, reasonCode) = try extensionDays(scanned)
            let storefronts = scanned.values["storefront"].map {
                $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).uppercased() }
            }
            if let storefronts, storefronts.isEmpty || storefronts.contains(where: { $0.count != 3 }) {
                throw SubctlError(.usage, "--storefront expects three-letter codes separated by commas (USA,CAN)")
            }
            var every = Duration.seconds(10)
            if let text = scanned.values["every"] {
                guard let seconds = Double(text), seconds >= 0.01, seconds <= 3600 else {
                    throw SubctlError(.usage, "--every expects seconds between 0.01 and 3600")
                }
                every = .milliseconds(Int64((seconds * 1000).rounded()))
            }
            operation = .massExtend(
                MassExtendAppleRenewalDateRequest(
                    productID: product, storefrontCountryCodes: storefronts ?? [],
                    environment: try appleEnvironment(scanned), days: days, reasonCode: reasonCode,
                    requestID: scanned.values["request-id"] ?? "", reason: try reason(scanned, "apple extend --all")),
                wait: !scanned.flags.contains("no-wait"), every: every)
        case "extend-status":
            scanned = try scan(
                Array(arguments.dropFirst()), command: "apple extend-status",
                values: connectionOptions.union(["env", "product", "request-id"]), flags: ["json"], positionals: 0...0)
            guard let product = scanned.values["product"], !product.isEmpty,
                let requestID = scanned.values["request-id"], !requestID.isEmpty
            else {
                throw SubctlError(.usage, "apple extend-status needs --product PRODUCT_ID and --request-id UUID")
            }
            operation = .massExtensionStatus(
                GetAppleMassExtensionStatusRequest(
                    productID: product, requestID: requestID, environment: try appleEnvironment(scanned)))
        case "extend":
            scanned = try scan(
                Array(arguments.dropFirst()), command: "apple extend",
                values: common.union(["days", "reason-code", "request-id"]), flags: ["json"], positionals: 1...1,
                missing: "apple extend needs an ORIGINAL_TRANSACTION_ID")
            let (days, reasonCode) = try extensionDays(scanned)
            operation = .extend(
                ExtendAppleRenewalDateRequest(
                    originalTransactionID: scanned.positionals[0], environment: try appleEnvironment(scanned),
                    days: days, reasonCode: reasonCode, requestID: scanned.values["request-id"] ?? "",
                    reason: try reason(scanned, "apple extend")))
        case "consumption":
            scanned = try scan(
                Array(arguments.dropFirst()), command: "apple consumption",
                values: common.union(["delivery", "percentage", "refund-preference"]),
                flags: ["json", "consented", "sample"], positionals: 1...1,
                missing: "apple consumption needs a TRANSACTION_ID")
            guard scanned.flags.contains("consented") else {
                throw SubctlError(
                    .usage,
                    "apple consumption needs --consented: consumption data is sent only with the customer's consent")
            }
            guard let delivery = scanned.values["delivery"], !delivery.isEmpty else {
                throw SubctlError(
                    .usage, "apple consumption needs --delivery STATUS (Apple's deliveryStatus, such as DELIVERED)")
            }
            var percentage: Int32?
            if let text = scanned.values["percentage"] {
                guard let value = Int32(text), (0...100_000).contains(value) else {
                    throw SubctlError(.usage, "--percentage expects milliunits, 0 to 100000")
                }
                percentage = value
            }
            operation = .consumption(
                SendAppleConsumptionInformationRequest(
                    transactionID: scanned.positionals[0], environment: try appleEnvironment(scanned),
                    customerConsented: true, deliveryStatus: delivery.uppercased(),
                    sampleContentProvided: scanned.flags.contains("sample"), consumptionPercentage: percentage,
                    refundPreference: scanned.values["refund-preference"]?.uppercased() ?? "",
                    reason: try reason(scanned, "apple consumption")))
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

    /// `--days N` (1...90) and `--reason-code 0-3` (0 when left out) of an extension.
    private static func extensionDays(_ scanned: Scanned) throws(SubctlError) -> (days: Int32, reasonCode: Int32) {
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
        return (days, reasonCode)
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
