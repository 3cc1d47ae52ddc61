/// A normalized lifecycle event, the same for both stores; the store's own notification type and
/// subtype travel beside it in a `LifecycleEvent`. Raw values are the wire numbers of
/// `subscriptions.common.v1.EventKind`.
///
/// `EVENT_KIND_UNSPECIFIED` (0) has no case: `nil` where a kind may be missing
/// (`EventKind(rawValue: 0)` is `nil`). A number this version does not know, from a newer peer,
/// becomes `.unknown(number)` and is stored and passed on unchanged.
public enum EventKind: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    case purchased
    case renewed
    case renewalDisabled
    case renewalEnabled
    case productChangeScheduled
    case productChanged
    case billingFailed
    case gracePeriodStarted
    case billingRecovered
    case accountHold
    case paused
    case pauseScheduled
    case resumed
    case expired
    case refunded
    case refundDeclined
    case refundReversed
    case revoked
    case renewalExtended
    case priceChange
    case acknowledged
    case accountLinked
    case accountTransferred
    case pendingCancelled
    case consumptionRequest
    case test
    /// A store event this version does not map; the event's `storeType` and `storeSubtype` say what it was.
    case other
    case stateRefreshed
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every kind this version knows, in wire order (no `unknown`).
    public static let allCases: [EventKind] = [
        .purchased, .renewed, .renewalDisabled, .renewalEnabled, .productChangeScheduled, .productChanged,
        .billingFailed, .gracePeriodStarted, .billingRecovered, .accountHold, .paused, .pauseScheduled, .resumed,
        .expired, .refunded, .refundDeclined, .refundReversed, .revoked, .renewalExtended, .priceChange,
        .acknowledged, .accountLinked, .accountTransferred, .pendingCancelled, .consumptionRequest, .test, .other,
        .stateRefreshed,
    ]

    /// The kind with wire number `rawValue`; `nil` only for 0 (unspecified).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .purchased
        case 2: self = .renewed
        case 3: self = .renewalDisabled
        case 4: self = .renewalEnabled
        case 5: self = .productChangeScheduled
        case 6: self = .productChanged
        case 7: self = .billingFailed
        case 8: self = .gracePeriodStarted
        case 9: self = .billingRecovered
        case 10: self = .accountHold
        case 11: self = .paused
        case 12: self = .pauseScheduled
        case 13: self = .resumed
        case 14: self = .expired
        case 15: self = .refunded
        case 16: self = .refundDeclined
        case 17: self = .refundReversed
        case 18: self = .revoked
        case 19: self = .renewalExtended
        case 20: self = .priceChange
        case 21: self = .acknowledged
        case 22: self = .accountLinked
        case 23: self = .accountTransferred
        case 24: self = .pendingCancelled
        case 25: self = .consumptionRequest
        case 26: self = .test
        case 27: self = .other
        case 28: self = .stateRefreshed
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .purchased: 1
        case .renewed: 2
        case .renewalDisabled: 3
        case .renewalEnabled: 4
        case .productChangeScheduled: 5
        case .productChanged: 6
        case .billingFailed: 7
        case .gracePeriodStarted: 8
        case .billingRecovered: 9
        case .accountHold: 10
        case .paused: 11
        case .pauseScheduled: 12
        case .resumed: 13
        case .expired: 14
        case .refunded: 15
        case .refundDeclined: 16
        case .refundReversed: 17
        case .revoked: 18
        case .renewalExtended: 19
        case .priceChange: 20
        case .acknowledged: 21
        case .accountLinked: 22
        case .accountTransferred: 23
        case .pendingCancelled: 24
        case .consumptionRequest: 25
        case .test: 26
        case .other: 27
        case .stateRefreshed: 28
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `EVENT_KIND_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .purchased: "purchased"
        case .renewed: "renewed"
        case .renewalDisabled: "renewal_disabled"
        case .renewalEnabled: "renewal_enabled"
        case .productChangeScheduled: "product_change_scheduled"
        case .productChanged: "product_changed"
        case .billingFailed: "billing_failed"
        case .gracePeriodStarted: "grace_period_started"
        case .billingRecovered: "billing_recovered"
        case .accountHold: "account_hold"
        case .paused: "paused"
        case .pauseScheduled: "pause_scheduled"
        case .resumed: "resumed"
        case .expired: "expired"
        case .refunded: "refunded"
        case .refundDeclined: "refund_declined"
        case .refundReversed: "refund_reversed"
        case .revoked: "revoked"
        case .renewalExtended: "renewal_extended"
        case .priceChange: "price_change"
        case .acknowledged: "acknowledged"
        case .accountLinked: "account_linked"
        case .accountTransferred: "account_transferred"
        case .pendingCancelled: "pending_cancelled"
        case .consumptionRequest: "consumption_request"
        case .test: "test"
        case .other: "other"
        case .stateRefreshed: "state_refreshed"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
