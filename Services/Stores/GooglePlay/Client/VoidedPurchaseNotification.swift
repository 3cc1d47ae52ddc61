/// `voidedPurchaseNotification` of a Real-time Developer Notification: a purchase was refunded,
/// charged back or otherwise voided. Access it granted ends.
public struct VoidedPurchaseNotification: Sendable, Hashable, Codable {
    /// `productType`: what kind of purchase was voided; other codes decode and are kept.
    public struct ProductType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The code Google sends.
        public let rawValue: Int

        /// The type with code `rawValue`, known or not.
        public init(rawValue: Int) {
            self.rawValue = rawValue
        }

        /// 1: a subscription.
        public static let subscription = Self(rawValue: 1)
        /// 2: a one-time product.
        public static let oneTime = Self(rawValue: 2)

        /// Whether the code is 1 or 2.
        public var isKnown: Bool { self == .subscription || self == .oneTime }

        /// Google's name (`PRODUCT_TYPE_SUBSCRIPTION`), or `UNKNOWN(<code>)`.
        public var description: String {
            switch self {
            case .subscription: "PRODUCT_TYPE_SUBSCRIPTION"
            case .oneTime: "PRODUCT_TYPE_ONE_TIME"
            default: "UNKNOWN(\(rawValue))"
            }
        }
    }

    /// `refundType`: how much was voided; other codes decode and are kept.
    public struct RefundType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The code Google sends.
        public let rawValue: Int

        /// The type with code `rawValue`, known or not.
        public init(rawValue: Int) {
            self.rawValue = rawValue
        }

        /// 1: the whole purchase was refunded.
        public static let fullRefund = Self(rawValue: 1)
        /// 2: part of the quantity of a multi-quantity purchase was refunded.
        public static let partialRefund = Self(rawValue: 2)

        /// Whether the code is 1 or 2.
        public var isKnown: Bool { self == .fullRefund || self == .partialRefund }

        /// Google's name (`REFUND_TYPE_FULL_REFUND`), or `UNKNOWN(<code>)`.
        public var description: String {
            switch self {
            case .fullRefund: "REFUND_TYPE_FULL_REFUND"
            case .partialRefund: "REFUND_TYPE_QUANTITY_BASED_PARTIAL_REFUND"
            default: "UNKNOWN(\(rawValue))"
            }
        }
    }

    /// The purchase token of the voided purchase.
    public var purchaseToken: String
    /// The order id of the voided transaction.
    public var orderId: String
    /// What kind of purchase it was.
    public var productType: ProductType
    /// Whether all or part of it was refunded.
    public var refundType: RefundType

    /// A notification with these fields.
    public init(purchaseToken: String, orderId: String, productType: ProductType, refundType: RefundType) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.productType = productType
        self.refundType = refundType
    }
}
