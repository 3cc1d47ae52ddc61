/// A link between an app account and a store subscription. Mirrors
/// `subscriptions.common.v1.AccountLink`; absent values are `nil` as in `Subscription`.
public struct AccountLink: Sendable, Hashable {
    /// The app account.
    public var accountID: String
    /// The linked subscription.
    public var key: SubscriptionKey
    /// Apple `appAccountToken` or Google obfuscated account id, when the purchase carried one.
    public var storeAccountRef: String?
    /// When the link was made, epoch milliseconds.
    public var linkedTimeMilliseconds: Int64?

    /// A link of `accountID` to the subscription `key`.
    public init(
        accountID: String, key: SubscriptionKey, storeAccountRef: String? = nil, linkedTimeMilliseconds: Int64? = nil
    ) {
        self.accountID = accountID
        self.key = key
        self.storeAccountRef = storeAccountRef
        self.linkedTimeMilliseconds = linkedTimeMilliseconds
    }
}
