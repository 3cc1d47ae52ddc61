/// The kind of offer a period was bought under. Raw values are the wire numbers of
/// `subscriptions.common.v1.OfferType`.
///
/// `OFFER_TYPE_UNSPECIFIED` (0, the regular price) has no case: `nil` where there is no offer.
/// Unknown non-zero numbers become `.unknown(number)`.
public enum OfferType: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    case freeTrial
    case introductory
    case promotional
    case offerCode
    case winBack
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every offer type this version knows, in wire order (no `unknown`).
    public static let allCases: [OfferType] = [.freeTrial, .introductory, .promotional, .offerCode, .winBack]

    /// The offer type with wire number `rawValue`; `nil` only for 0 (no offer).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .freeTrial
        case 2: self = .introductory
        case 3: self = .promotional
        case 4: self = .offerCode
        case 5: self = .winBack
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .freeTrial: 1
        case .introductory: 2
        case .promotional: 3
        case .offerCode: 4
        case .winBack: 5
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `OFFER_TYPE_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .freeTrial: "free_trial"
        case .introductory: "introductory"
        case .promotional: "promotional"
        case .offerCode: "offer_code"
        case .winBack: "win_back"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}

/// Why a subscription ended or will end. Raw values are the wire numbers of
/// `subscriptions.common.v1.ExpirationReason`; 0 (unspecified) is `nil`, unknown numbers
/// `.unknown(number)`.
public enum ExpirationReason: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    /// The customer turned renewal off.
    case cancelled
    case billingError
    /// The customer did not agree to a price increase.
    case priceIncrease
    case productUnavailable
    case other
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every reason this version knows, in wire order (no `unknown`).
    public static let allCases: [ExpirationReason] = [
        .cancelled, .billingError, .priceIncrease, .productUnavailable, .other,
    ]

    /// The reason with wire number `rawValue`; `nil` only for 0 (unspecified).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .cancelled
        case 2: self = .billingError
        case 3: self = .priceIncrease
        case 4: self = .productUnavailable
        case 5: self = .other
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .cancelled: 1
        case .billingError: 2
        case .priceIncrease: 3
        case .productUnavailable: 4
        case .other: 5
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `EXPIRATION_REASON_` prefix, lowercased.
    public var description: String {
        switch self {
        case .cancelled: "cancelled"
        case .billingError: "billing_error"
        case .priceIncrease: "price_increase"
        case .productUnavailable: "product_unavailable"
        case .other: "other"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
