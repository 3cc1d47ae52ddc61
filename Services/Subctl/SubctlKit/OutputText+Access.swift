public import Wire

extension OutputText {
    /// A timeline as a table a capability at a time: each interval's start and end, kind,
    /// answer, the subscription it rests on and the verified fact (period or status interval)
    /// that holds it.
    public static func timeline(_ response: GetAccessTimelineResponse) -> [String] {
        guard !response.capabilities.isEmpty else { return ["nothing grants the account any capability"] }
        var lines: [String] = []
        for capability in response.capabilities {
            lines.append("capability \(capability.capability)")
            var rows = [["FROM", "TO", "KIND", "ACCESS", "SUBSCRIPTION", "PRODUCT", "FACT"]]
            for interval in capability.intervals { rows.append(row(interval)) }
            let widths = (0..<7).map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                let cells = row.enumerated().map { column, cell in
                    column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
                }
                lines.append("  " + cells.joined(separator: "  "))
            }
            if capability.truncated { lines.append("  (more: ask again from the last interval's end)") }
        }
        return lines
    }

    /// One interval's cells.
    static func row(_ interval: TimelineInterval) -> [String] {
        let access = interval.allowed ? "allowed" : reason(interval.reason)
        let key = interval.grant?.key.map { "\($0)" } ?? "-"
        var fact = "-"
        if let start = interval.factStartMilliseconds {
            let end: String = interval.factEndMilliseconds.map { time($0) } ?? ""
            fact = time(start) + ".." + end
        }
        return [
            time(interval.startMilliseconds), time(interval.endMilliseconds), kind(interval.kind), access, key,
            interval.grant?.productID ?? "-", fact,
        ]
    }

    /// A timeline kind as the table names it: `paid`, `trial`, `billing_retry`, ….
    static func kind(_ kind: TimelineKind?) -> String {
        guard let kind else { return "-" }
        switch kind {
        case .paid: return "paid"
        case .trial: return "trial"
        case .offer: return "offer"
        case .grace: return "grace"
        case .billingRetry: return "billing_retry"
        case .accountHold: return "account_hold"
        case .paused: return "paused"
        case .revoked: return "revoked"
        case .granted: return "granted"
        case .gap: return "gap"
        case .pending: return "pending"
        case .otherAllowed: return "allowed_state"
        case .unknown(let number): return "kind \(number)"
        }
    }

    /// A denial's reason: `expired`, `revoked`, `state_denies`, `no_grant`.
    static func reason(_ reason: AccessReason?) -> String {
        switch reason {
        case .expired?: "expired"
        case .revoked?: "revoked"
        case .stateDenies?: "state_denies"
        case .noGrant?: "no_grant"
        case .unknownCapability?: "unknown_capability"
        case .granted?: "allowed"
        case .unknown(let number)?: "reason \(number)"
        case nil: "-"
        }
    }
}
