/// A subscription offer as Apple reports it on the transactions it covers: `offerType`,
/// `offerDiscountType`, `offerIdentifier` (not for introductory offers) and the `price` paid.
///
/// A free trial and a pay-up-front offer cover one offer period of their own length; a
/// pay-as-you-go offer covers `periods` periods in a row, each renewal in it carrying the offer
/// again. The renewal after the offer is a plain one, at the product's price and without
/// `offerType`.
public struct AppleSimOffer: Sendable, Hashable {
    /// Apple's `offerType`.
    public enum Kind: Int, Sendable, Hashable {
        case introductory = 1
        case promotional = 2
        case offerCode = 3
        case winBack = 4
    }

    /// Apple's `offerDiscountType`.
    public enum Discount: String, Sendable, Hashable {
        case freeTrial = "FREE_TRIAL"
        case payAsYouGo = "PAY_AS_YOU_GO"
        case payUpFront = "PAY_UP_FRONT"
    }

    public let kind: Kind
    public let discount: Discount
    /// The offer's id in App Store Connect; nil exactly for an introductory offer.
    public let identifier: String?
    /// The length of one offer period.
    public let period: AppleSimProduct.Period
    /// How many periods in a row the offer covers: 1 unless pay-as-you-go.
    public let periods: Int
    /// The price of one offer period, in milliunits: 0 for a free trial.
    public let price: Int64

    /// An offer. Throws `SimError` (`.badRequest`) when it is not one Apple could configure: an
    /// identifier missing on a promotional, offer-code or win-back offer, or present on an
    /// introductory one; a free trial with a price; more than one period but for pay-as-you-go;
    /// a period count below 1 or a negative price.
    public init(
        kind: Kind, discount: Discount, identifier: String? = nil, period: AppleSimProduct.Period, periods: Int = 1,
        price: Int64 = 0
    ) throws(SimError) {
        if kind == .introductory {
            guard identifier == nil else {
                throw SimError(.badRequest, "an introductory offer has no identifier")
            }
        } else {
            guard let identifier, !identifier.isEmpty else {
                throw SimError(.badRequest, "a promotional, offer-code or win-back offer needs an identifier")
            }
        }
        guard periods >= 1, discount == .payAsYouGo || periods == 1 else {
            throw SimError(.badRequest, "only a pay-as-you-go offer covers more than one period")
        }
        guard price >= 0, discount != .freeTrial || price == 0 else {
            throw SimError(.badRequest, "a free trial costs 0 and no price is negative")
        }
        self.kind = kind
        self.discount = discount
        self.identifier = identifier
        self.period = period
        self.periods = periods
        self.price = price
    }

    /// An introductory free trial of `period` (a week unless told).
    public static func freeTrial(_ period: AppleSimProduct.Period = .days(7)) -> AppleSimOffer {
        // Valid by construction: introductory, no identifier, one period, price 0.
        try! AppleSimOffer(kind: .introductory, discount: .freeTrial, period: period)
    }
}
