/// Identifies one store subscription or purchase: the store, its environment, and the store's
/// own id (Apple `originalTransactionId`, or `transactionId` for one-time products; Google's
/// purchase token).
public struct SubscriptionKey: Sendable, Hashable, CustomStringConvertible {
    public var store: Store
    public var environment: StoreEnvironment
    public var storeID: String

    public init(store: Store, environment: StoreEnvironment, storeID: String) {
        self.store = store
        self.environment = environment
        self.storeID = storeID
    }

    public var description: String { "\(store)/\(environment)/\(storeID)" }

    /// The key the ledger's account events (a merge, a deletion, a redelivery no subscription
    /// names) carry: that of no subscription.
    public static let accountEvents = SubscriptionKey(store: .promotional, environment: .production, storeID: "")
}
