/// `SubscriptionPurchaseV2`, as `purchases.subscriptionsv2.get` answers. Times are RFC 3339
/// strings as Google sends them; fields Google adds later are ignored here.
public struct SubscriptionPurchaseV2: Sendable, Hashable, Codable {
    public var kind: String?
    public var regionCode: String?
    public var startTime: String?
    /// SUBSCRIPTION_STATE_UNSPECIFIED, _PENDING, _ACTIVE, _PAUSED, _IN_GRACE_PERIOD, _ON_HOLD,
    /// _CANCELED, _EXPIRED, _PENDING_PURCHASE_CANCELED.
    public var subscriptionState: String?
    public var latestOrderId: String?
    public var linkedPurchaseToken: String?
    public var acknowledgementState: String?
    public var testPurchase: Empty?
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
    public var pausedStateContext: PausedStateContext?
    public var canceledStateContext: CanceledStateContext?
    public var lineItems: [LineItem]?
    /// The answer as Google sent it (set by the client; at most `maxRawBytes`, nil when longer).
    public var raw: String?

    /// The most raw JSON kept with an answer.
    public static let maxRawBytes = 64 * 1024

    public init() {}

    /// An object whose presence is the information (`testPurchase: {}`).
    public struct Empty: Sendable, Hashable, Codable {
        public init() {}
    }

    public struct ExternalAccountIdentifiers: Sendable, Hashable, Codable {
        public var externalAccountId: String?
        public var obfuscatedExternalAccountId: String?
        public var obfuscatedExternalProfileId: String?
        public init() {}
    }

    public struct PausedStateContext: Sendable, Hashable, Codable {
        public var autoResumeTime: String?
        public init() {}
    }

    /// Why renewal stopped; exactly one member is present.
    public struct CanceledStateContext: Sendable, Hashable, Codable {
        public var userInitiatedCancellation: UserInitiatedCancellation?
        public var systemInitiatedCancellation: Empty?
        public var developerInitiatedCancellation: Empty?
        public var replacementCancellation: Empty?
        public init() {}

        public struct UserInitiatedCancellation: Sendable, Hashable, Codable {
            public var cancelTime: String?
            public init() {}
        }
    }

    public struct LineItem: Sendable, Hashable, Codable {
        public var productId: String?
        public var expiryTime: String?
        public var autoRenewingPlan: AutoRenewingPlan?
        public var prepaidPlan: PrepaidPlan?
        public var offerDetails: OfferDetails?
        public var latestSuccessfulOrderId: String?
        public var deferredItemReplacement: DeferredItemReplacement?
        public init() {}

        public struct AutoRenewingPlan: Sendable, Hashable, Codable {
            public var autoRenewEnabled: Bool?
            public var recurringPrice: Money?
            /// Present for an installment plan: a commitment to a number of payments.
            public var installmentDetails: InstallmentPlan?
            public init() {}

            public struct InstallmentPlan: Sendable, Hashable, Codable {
                public var initialCommittedPaymentsCount: Int?
                public var subsequentCommittedPaymentsCount: Int?
                public var remainingCommittedPaymentsCount: Int?
                public init() {}
            }
        }

        /// An amount as Google writes it: whole `units` (a decimal string) and `nanos`.
        public struct Money: Sendable, Hashable, Codable {
            public var currencyCode: String?
            public var units: String?
            public var nanos: Int?
            public init() {}

            /// The amount in millionths of the currency unit; nil when it cannot be read.
            public var micros: Int64? {
                guard let whole = Int64(units ?? "0"), abs(whole) < 9_000_000_000_000 else { return nil }
                return whole * 1_000_000 + Int64((nanos ?? 0) / 1000)
            }
        }

        public struct PrepaidPlan: Sendable, Hashable, Codable {
            public var allowExtendAfterTime: String?
            public init() {}
        }

        public struct OfferDetails: Sendable, Hashable, Codable {
            public var basePlanId: String?
            public var offerId: String?
            public var offerTags: [String]?
            public init() {}
        }

        /// A product change that takes effect at the next renewal.
        public struct DeferredItemReplacement: Sendable, Hashable, Codable {
            public var productId: String?
            public init() {}
        }
    }
}

/// `ProductPurchase` (a one-time product), as `purchases.products.get` answers.
public struct ProductPurchase: Sendable, Hashable, Codable {
    public var kind: String?
    /// Milliseconds since the epoch, as a decimal string.
    public var purchaseTimeMillis: String?
    /// 0 purchased, 1 canceled, 2 pending.
    public var purchaseState: Int?
    /// 0 not yet consumed, 1 consumed.
    public var consumptionState: Int?
    public var orderId: String?
    /// 0 test, 1 promo, 2 rewarded; absent for a normal purchase.
    public var purchaseType: Int?
    /// 0 not yet acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?
    public var purchaseToken: String?
    public var productId: String?
    public var quantity: Int?
    /// The units not refunded yet (present for a multi-unit purchase).
    public var refundableQuantity: Int?
    public var obfuscatedExternalAccountId: String?
    public var obfuscatedExternalProfileId: String?
    public var regionCode: String?
    /// The answer as Google sent it (set by the client; nil when longer than 64 KiB).
    public var raw: String?
    public init() {}
}

/// One entry of `purchases.voidedpurchases.list`.
public struct VoidedPurchase: Sendable, Hashable, Codable {
    public var kind: String?
    public var purchaseToken: String?
    public var purchaseTimeMillis: String?
    public var voidedTimeMillis: String?
    public var orderId: String?
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud,
    /// 6 friendly fraud, 7 chargeback.
    public var voidedReason: Int?
    /// How many units a quantity-based partial refund voided (only present when asked with
    /// `includeQuantityBasedPartialRefund=true`).
    public var voidedQuantity: Int?
    /// The entry as Google sent it (set by the client).
    public var raw: String?
    public init() {}
}
