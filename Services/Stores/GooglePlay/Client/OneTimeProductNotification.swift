/// `oneTimeProductNotification` of a Real-time Developer Notification: a one-time product was
/// purchased, or a pending purchase of one was cancelled.
public struct OneTimeProductNotification: Sendable, Hashable, Codable {
    /// `notificationType` of a one-time product notification; other codes decode and are kept.
    public struct NotificationType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The code Google sends.
        public let rawValue: Int

        /// The type with code `rawValue`, known or not.
        public init(rawValue: Int) {
            self.rawValue = rawValue
        }

        /// 1: a one-time product was purchased.
        public static let purchased = Self(rawValue: 1)
        /// 2: a pending one-time purchase was cancelled.
        public static let canceled = Self(rawValue: 2)

        /// Google's name for the code (`ONE_TIME_PRODUCT_PURCHASED`), nil for a code other than 1 or 2.
        public var name: String? {
            switch self {
            case .purchased: "ONE_TIME_PRODUCT_PURCHASED"
            case .canceled: "ONE_TIME_PRODUCT_CANCELED"
            default: nil
            }
        }

        /// Whether the code is 1 or 2.
        public var isKnown: Bool { name != nil }

        /// The name, or `UNKNOWN(<code>)`.
        public var description: String { name ?? "UNKNOWN(\(rawValue))" }
    }

    /// The notification's version (`1.0`).
    public var version: String
    /// What happened.
    public var notificationType: NotificationType
    /// The purchase token.
    public var purchaseToken: String
    /// The product id.
    public var sku: String

    /// A notification with these fields.
    public init(version: String, notificationType: NotificationType, purchaseToken: String, sku: String) {
        self.version = version
        self.notificationType = notificationType
        self.purchaseToken = purchaseToken
        self.sku = sku
    }
}
