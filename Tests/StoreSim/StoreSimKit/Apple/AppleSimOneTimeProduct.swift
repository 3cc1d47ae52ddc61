/// A product the simulated App Store sells once: a consumable, a non-consumable or a
/// non-renewing subscription. Each purchase is one transaction of its own
/// (`originalTransactionId` = `transactionId`) with no `expiresDate`: the app decides how long a
/// non-renewing subscription lasts.
public struct AppleSimOneTimeProduct: Sendable, Hashable {
    /// The kind, spelled as Apple writes it in a transaction's `type`.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case consumable = "Consumable"
        case nonConsumable = "Non-Consumable"
        case nonRenewingSubscription = "Non-Renewing Subscription"
    }

    public let id: String
    public let kind: Kind
    /// The price in milliunits of the currency, as Apple reports it.
    public let price: Int64

    public init(id: String, kind: Kind, price: Int64 = 990) {
        self.id = id
        self.kind = kind
        self.price = price
    }

    /// Whether Family Sharing can share it: of the one-time kinds, only non-consumables.
    var isShareable: Bool { kind == .nonConsumable }
}
