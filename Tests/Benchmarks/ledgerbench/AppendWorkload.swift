import Model
import Wire

/// What one append is: a RecordVerifiedState request for a subscription of its own, with a
/// unique idempotency key and one event carrying a 500-byte raw payload; and the sizes of the
/// rows the ledger stores for it, so the raw-engine runs insert rows of the same size.
struct AppendWorkload: Sendable {
    static let method = LedgerRPC.recordVerifiedState.name
    static let payloadBytes = 500
    /// A fixed store time (2024-01-01): every append is the first state of its subscription.
    static let storeTime: Int64 = 1_704_067_200_000

    /// Distinguishes this run's keys from any other's.
    let runID: String
    private let payload: String

    init(runID: String) {
        self.runID = runID
        // Printable and not one repeated character, like a store's signed payload.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        payload = String((0..<Self.payloadBytes).map { alphabet[($0 * 37 + 11) % alphabet.count] })
    }

    /// The request for append `sequence` of `writer` in `phase`; its idempotency key and
    /// subscription id are unique in the run.
    func request(phase: String, writer: Int, sequence: Int) -> RecordVerifiedStateRequest {
        let id = storeID(phase: phase, writer: writer, sequence: sequence)
        let key = SubscriptionKey(store: .apple, environment: .production, storeID: id)
        let subscription = Subscription(
            key: key, productID: "com.example.premium.monthly", productKind: .autoRenewable, state: .active,
            ownership: .purchased, purchaseTimeMilliseconds: Self.storeTime,
            originalPurchaseTimeMilliseconds: Self.storeTime, expiresTimeMilliseconds: Self.storeTime + 2_592_000_000,
            autoRenew: true, autoRenewProductID: "com.example.premium.monthly", acknowledged: true,
            storeTimeMilliseconds: Self.storeTime, bundleOrPackage: "com.example.app", latestOrderID: "order-\(id)")
        let event = LifecycleEvent(
            key: key, kind: .renewed, storeTimeMilliseconds: Self.storeTime, storeType: "DID_RENEW",
            notificationID: "notification-\(id)", state: .active, rawPayload: payload)
        return RecordVerifiedStateRequest(idempotencyKey: "idem-\(id)", subscription: subscription, events: [event])
    }

    /// The subscription id of append `sequence` of `writer` in `phase` (its idempotency key is
    /// "idem-" and this id).
    func storeID(phase: String, writer: Int, sequence: Int) -> String { "\(keyPrefix(phase))-\(writer)-\(sequence)" }

    /// What every subscription id of `phase` starts with (then "-writer-sequence").
    func keyPrefix(_ phase: String) -> String { "\(runID)-\(phase)" }

    /// The serialized sizes of the blobs the ledger stores for one append, built the way
    /// Ledger.recordVerifiedState builds them (position, verified time and state filled in).
    struct RowSizes {
        var state: Int
        var event: Int
        var change: Int
        var response: Int
    }

    func rowSizes() -> RowSizes {
        let request = self.request(phase: "sizes", writer: 0, sequence: 0)
        let now = Self.storeTime + 1000
        var subscription = request.subscription!
        subscription.verifiedTimeMilliseconds = now
        var event = request.events[0]
        event.position = 1_000_000
        event.verifiedTimeMilliseconds = now
        let change = Change(
            position: 1_000_000, committedTimeMilliseconds: now, kind: .subscription, subscription: subscription,
            events: [event])
        let response = RecordVerifiedStateResponse(
            subscription: subscription, applied: true, replayed: false, position: 1_000_000)
        return RowSizes(
            state: subscription.serialized().count, event: event.serialized().count,
            change: change.serialized().count, response: response.serialized().count)
    }
}
