/// The dotted names of the events sent out, and the patterns endpoints choose them by.
public enum EventType {
    public static let accessGranted = "access.granted"
    public static let accessExtended = "access.extended"
    public static let accessEnded = "access.ended"
    public static let test = "test"

    /// The name of the event a normalized lifecycle event becomes: `subscription.*` for a
    /// store's, `grant.*` for a promotional grant's, `account.*` for a merge or a deletion.
    public static func name(of kind: EventKind) -> String {
        switch kind {
        case .purchased: "subscription.purchased"
        case .renewed: "subscription.renewed"
        case .renewalDisabled: "subscription.renewal_disabled"
        case .renewalEnabled: "subscription.renewal_enabled"
        case .productChangeScheduled: "subscription.product_change_scheduled"
        case .productChanged: "subscription.product_change_applied"
        case .billingFailed: "subscription.billing_issue"
        case .gracePeriodStarted: "subscription.grace_period_started"
        case .billingRecovered: "subscription.billing_recovered"
        case .accountHold: "subscription.account_hold"
        case .paused: "subscription.paused"
        case .pauseScheduled: "subscription.pause_scheduled"
        case .resumed: "subscription.resumed"
        case .expired: "subscription.expired"
        case .refunded: "subscription.refunded"
        case .refundDeclined: "subscription.refund_declined"
        case .refundReversed: "subscription.refund_reversed"
        case .revoked: "subscription.revoked"
        case .renewalExtended: "subscription.renewal_extended"
        case .priceChange: "subscription.price_change"
        case .acknowledged: "subscription.acknowledged"
        case .accountLinked: "subscription.linked"
        case .accountTransferred: "subscription.transferred"
        case .pendingCancelled: "subscription.pending_cancelled"
        case .consumptionRequest: "subscription.consumption_request"
        case .test: test
        case .other: "subscription.other"
        case .stateRefreshed: "subscription.state_refreshed"
        case .grantCreated: "grant.created"
        case .grantRevoked: "grant.revoked"
        case .accountMerged: "account.merged"
        case .accountDeleted: "account.deleted"
        case .imported: "subscription.imported"
        case .storeAction: "subscription.store_action"
        case .unknown: "subscription.other"
        }
    }

    /// Whether `type` is chosen by `patterns`: a name, or a prefix and `.*` (`access.*`), or
    /// `*`; no patterns choose everything.
    public static func matches(_ type: String, _ patterns: [String]) -> Bool {
        guard !patterns.isEmpty else { return true }
        return patterns.contains { pattern in
            if pattern == "*" || pattern == type { return true }
            guard pattern.hasSuffix(".*") else { return false }
            return type.hasPrefix(pattern.dropLast())
        }
    }

    /// Whether `pattern` is one an endpoint may give: a known name, a known prefix and `.*`,
    /// or `*`.
    public static func isValidPattern(_ pattern: String) -> Bool {
        if pattern == "*" { return true }
        let names = EventKind.allCases.map(name(of:)) + [accessGranted, accessExtended, accessEnded, test]
        if pattern.hasSuffix(".*") {
            let prefix = pattern.dropLast()
            return names.contains { $0.hasPrefix(prefix) }
        }
        return names.contains(pattern)
    }
}

/// The name of a webhook endpoint, as the endpoints file gives it and the ledger keys its
/// delivery state by: 1 to 64 of `a-z 0-9 _ -`.
public enum WebhookEndpointName {
    public static func isValid(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy {
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D
            }
    }
}
