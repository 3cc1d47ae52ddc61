/// `testNotification` of a Real-time Developer Notification: sent from the Play Console to check
/// the Pub/Sub setup. It concerns no purchase.
public struct TestNotification: Sendable, Hashable, Codable {
    /// The notification's version (`1.0`).
    public var version: String

    /// A test notification of `version`.
    public init(version: String) {
        self.version = version
    }
}
