public import Model

/// One subscription as the view keeps it: what access decisions and grants need, in a few
/// dozen bytes. Times are Unix epoch milliseconds with 0 for absent.
struct Holding: Sendable {
    var key: StoreKey
    /// Index into the view's product table (store, product id, base plan).
    var product: UInt32
    var kind: UInt8
    var state: UInt8
    var replaced: Bool
    var purchase: Int64
    var expires: Int64
    var grace: Int64
    var revoked: Int64

    /// The shared model's subscription for the access rule (no strings: the rule reads none).
    var decisionInput: Subscription {
        Subscription(
            key: Self.placeholderKey, productKind: kind == 0 ? nil : ProductKind(rawValue: Int32(kind)),
            state: state == 0 ? nil : SubscriptionState(rawValue: Int32(state)),
            purchaseTimeMilliseconds: Self.time(purchase), expiresTimeMilliseconds: Self.time(expires),
            graceExpiresTimeMilliseconds: Self.time(grace), revokedTimeMilliseconds: Self.time(revoked),
            replacedByStoreID: replaced ? Self.placeholderKey.storeID : nil)
    }

    static let placeholderKey = SubscriptionKey(store: .apple, environment: .production, storeID: "-")

    static func time(_ value: Int64) -> Int64? { value == 0 ? nil : value }
}
