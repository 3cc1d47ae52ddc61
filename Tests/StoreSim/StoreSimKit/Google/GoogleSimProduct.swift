/// A subscription product the simulated Google Play sells: a subscription id with one base plan,
/// auto-renewing or prepaid.
public struct GoogleSimProduct: Sendable, Hashable {
    public let id: String
    public let basePlanID: String
    public let period: AppleSimProduct.Period
    /// A prepaid base plan: it never renews; the customer extends it by topping it up.
    public let prepaid: Bool

    public init(id: String, basePlanID: String, period: AppleSimProduct.Period, prepaid: Bool = false) {
        self.id = id
        self.basePlanID = basePlanID
        self.period = period
        self.prepaid = prepaid
    }

    /// The end of one period of this plan that starts at `start` (epoch ms).
    func end(from start: Int64) -> Int64 {
        AppleSimProduct(id: id, group: "", period: period, level: 1).end(from: start)
    }
}

/// A one-time product (an in-app product) the simulated Google Play sells, bought in a quantity.
public struct GoogleSimOneTimeProduct: Sendable, Hashable {
    public let id: String

    public init(id: String) { self.id = id }
}
