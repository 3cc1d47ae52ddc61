/// `subscriptionNotification.notificationType` of a Real-time Developer Notification. Any
/// integer decodes: a code Google adds later is kept as it is (`isKnown` is false) so it can be
/// recorded rather than refused.
public struct SubscriptionNotificationType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The code Google sends.
    public let rawValue: Int

    /// The type with code `rawValue`, known or not.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// 1: a subscription recovered from account hold.
    public static let recovered = Self(rawValue: 1)
    /// 2: an active subscription renewed.
    public static let renewed = Self(rawValue: 2)
    /// 3: cancelled, voluntarily or not; access lasts until the expiry time.
    public static let canceled = Self(rawValue: 3)
    /// 4: a new subscription was purchased.
    public static let purchased = Self(rawValue: 4)
    /// 5: entered account hold (no access).
    public static let onHold = Self(rawValue: 5)
    /// 6: entered the grace period (access kept).
    public static let inGracePeriod = Self(rawValue: 6)
    /// 7: the user restored a cancelled subscription before it expired.
    public static let restarted = Self(rawValue: 7)
    /// 8: the user confirmed a price change (deprecated by Google).
    public static let priceChangeConfirmed = Self(rawValue: 8)
    /// 9: the renewal time was pushed back (deferred).
    public static let deferred = Self(rawValue: 9)
    /// 10: paused (no access).
    public static let paused = Self(rawValue: 10)
    /// 11: a pause was scheduled, changed or cleared.
    public static let pauseScheduleChanged = Self(rawValue: 11)
    /// 12: revoked before its expiry time (no access from now).
    public static let revoked = Self(rawValue: 12)
    /// 13: expired.
    public static let expired = Self(rawValue: 13)
    /// 17: the items of the subscription changed.
    public static let itemsChanged = Self(rawValue: 17)
    /// 18: a cancellation was scheduled for the end of the period.
    public static let cancellationScheduled = Self(rawValue: 18)
    /// 19: a price change was updated.
    public static let priceChangeUpdated = Self(rawValue: 19)
    /// 20: a pending purchase was cancelled.
    public static let pendingPurchaseCanceled = Self(rawValue: 20)
    /// 22: the user's consent to a price step-up changed.
    public static let priceStepUpConsentUpdated = Self(rawValue: 22)

    /// Every code this type names, with Google's name for it (1–13, 17–20, 22; there is no 14,
    /// 15, 16 or 21).
    public static let known: [(type: Self, name: String)] = [
        (.recovered, "SUBSCRIPTION_RECOVERED"), (.renewed, "SUBSCRIPTION_RENEWED"),
        (.canceled, "SUBSCRIPTION_CANCELED"), (.purchased, "SUBSCRIPTION_PURCHASED"),
        (.onHold, "SUBSCRIPTION_ON_HOLD"), (.inGracePeriod, "SUBSCRIPTION_IN_GRACE_PERIOD"),
        (.restarted, "SUBSCRIPTION_RESTARTED"), (.priceChangeConfirmed, "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED"),
        (.deferred, "SUBSCRIPTION_DEFERRED"), (.paused, "SUBSCRIPTION_PAUSED"),
        (.pauseScheduleChanged, "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED"), (.revoked, "SUBSCRIPTION_REVOKED"),
        (.expired, "SUBSCRIPTION_EXPIRED"), (.itemsChanged, "SUBSCRIPTION_ITEMS_CHANGED"),
        (.cancellationScheduled, "SUBSCRIPTION_CANCELLATION_SCHEDULED"),
        (.priceChangeUpdated, "SUBSCRIPTION_PRICE_CHANGE_UPDATED"),
        (.pendingPurchaseCanceled, "SUBSCRIPTION_PENDING_PURCHASE_CANCELED"),
        (.priceStepUpConsentUpdated, "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED"),
    ]

    /// Google's name for the code (`SUBSCRIPTION_RENEWED`), nil for a code not listed above.
    public var name: String? { Self.known.first { $0.type == self }?.name }

    /// Whether the code is one of those this type names.
    public var isKnown: Bool { name != nil }

    /// The name, or `UNKNOWN(<code>)`.
    public var description: String { name ?? "UNKNOWN(\(rawValue))" }
}
