import Wire

extension SubctlCommand {
    /// Parses `google revoke|refund|defer|cancel …` from the arguments after `google`. Throws
    /// `usage` for a malformed command line.
    static func parseGoogle(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let verbs = "revoke, refund, defer or cancel"
        guard let verb = arguments.first else { throw SubctlError(.usage, "google needs \(verbs)") }
        let extra: Set<String>
        let subject: String
        switch verb {
        case "revoke": (extra, subject) = (["refund"], "a purchase TOKEN")
        case "refund": (extra, subject) = (["token"], "an ORDER_ID")
        case "defer": (extra, subject) = (["product", "days", "until"], "a purchase TOKEN")
        case "cancel": (extra, subject) = ([], "a purchase TOKEN")
        default: throw SubctlError(.usage, "google needs \(verbs), got \"\(verb)\"")
        }
        let command = "google \(verb)"
        let scanned = try scan(
            Array(arguments.dropFirst()), command: command,
            values: connectionOptions.union(["package", "reason"]).union(extra),
            flags: verb == "refund" ? ["json", "revoke"] : ["json"], positionals: 1...1,
            missing: "\(command) needs \(subject)")
        func value(_ name: String, _ what: String) throws(SubctlError) -> String {
            guard let text = scanned.values[name], !text.isEmpty else {
                throw SubctlError(.usage, "\(command) needs --\(name) \(what)")
            }
            return text
        }
        let first = scanned.positionals[0]
        let package = try value("package", "PACKAGE")
        let reason = try value("reason", "TEXT (why, for the audit trail)")
        let google: GoogleCommand
        switch verb {
        case "revoke":
            let refund: GoogleRefund
            switch try value("refund", "full|prorated") {
            case "full": refund = .full
            case "prorated": refund = .prorated
            case let other: throw SubctlError(.usage, "--refund expects full or prorated, got \"\(other)\"")
            }
            google = .revoke(
                RevokeGooglePurchaseRequest(purchaseToken: first, packageName: package, refund: refund, reason: reason))
        case "refund":
            google = .refund(
                RefundGoogleOrderRequest(
                    packageName: package, orderID: first, purchaseToken: try value("token", "TOKEN"),
                    revoke: scanned.flags.contains("revoke"), reason: reason))
        case "defer":
            var request = DeferGoogleRenewalRequest(
                purchaseToken: first, packageName: package, productID: try value("product", "SUBSCRIPTION_ID"),
                reason: reason)
            switch (scanned.values["days"], scanned.values["until"]) {
            case (let days?, nil):
                guard let number = Int32(days), (1...365).contains(number) else {
                    throw SubctlError(.usage, "--days expects 1 to 365, got \"\(days)\"")
                }
                request.days = number
            case (nil, let until?):
                guard let instant = AccessCommand.instant(until) else {
                    throw SubctlError(
                        .usage,
                        "--until expects epoch milliseconds, a date (2026-01-31) or a UTC time (2026-01-31T12:00:00Z), got \"\(until)\""
                    )
                }
                request.desiredExpiryMilliseconds = instant
            default: throw SubctlError(.usage, "google defer needs --days N or --until TIME, one of them")
            }
            google = .deferRenewal(request)
        default:
            google = .cancel(
                CancelGoogleSubscriptionRequest(purchaseToken: first, packageName: package, reason: reason))
        }
        return .google(google, options: try options(scanned, command: command, streaming: false))
    }
}
