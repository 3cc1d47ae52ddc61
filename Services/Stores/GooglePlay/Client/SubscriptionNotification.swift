/// `subscriptionNotification` of a Real-time Developer Notification: something happened to a
/// subscription purchase. The notification says what kind of event it was, not the resulting
/// state: fetch the purchase (`GooglePlayAPI.subscription`) for that.
public struct SubscriptionNotification: Sendable, Hashable, Codable {
    /// The notification's version (`1.0`).
    public var version: String
    /// What happened.
    public var notificationType: SubscriptionNotificationType
    /// The purchase token of the subscription.
    public var purchaseToken: String
    /// The product id of the subscription. Older notifications carry it; Google's current
    /// reference no longer lists it, so it may be absent.
    public var subscriptionId: String?

    /// A notification with these fields.
    public init(
        version: String, notificationType: SubscriptionNotificationType, purchaseToken: String,
        subscriptionId: String?
    ) {
        self.version = version
        self.notificationType = notificationType
        self.purchaseToken = purchaseToken
        self.subscriptionId = subscriptionId
    }
}
