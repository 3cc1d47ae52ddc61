import Model
import Wire

/// The ledger methods these tests call and the requests they send.
enum LedgerCalls {
    static let service = "subscriptions.ledger.v1.Ledger"
    static let recordVerifiedState = "\(service)/RecordVerifiedState"
    static let watchChanges = "\(service)/WatchChanges"

    /// A RecordVerifiedState request tagged `tag`: the tag is its idempotency key and the
    /// `detail` of its one event, so the event can be found in the change feed. Built the same
    /// way every time, so a resent request is byte for byte the first one.
    static func record(tag: String, storeID: String, storeTime: Int64) -> RecordVerifiedStateRequest {
        let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: storeID)
        let state = Subscription(
            key: key, productID: "pro.monthly", productKind: .autoRenewable, state: .active,
            expiresTimeMilliseconds: storeTime + 30 * 86_400_000, autoRenew: true, storeTimeMilliseconds: storeTime,
            bundleOrPackage: "com.example.app")
        return RecordVerifiedStateRequest(
            idempotencyKey: tag, subscription: state,
            events: [
                LifecycleEvent(
                    key: key, kind: .renewed, storeTimeMilliseconds: storeTime, storeType: "DID_RENEW", detail: tag)
            ])
    }

    /// The tag of the one event a change carries; nil when it carries another number of events.
    static func tag(of change: Change) -> String? {
        change.events.count == 1 ? change.events[0].detail : nil
    }
}
