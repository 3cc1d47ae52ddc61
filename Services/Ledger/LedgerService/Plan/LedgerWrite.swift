import Model
import Wire

/// One write of a plan, as plain values: what a rule decided, not how the database does it.
/// `LedgerStore.apply` performs a plan's writes in order; it is the only place they are written.
enum LedgerWrite: Sendable, Equatable {
    /// A subscription's current row, at a change-feed position.
    case saveSubscription(Subscription, position: UInt64)
    /// One recorded period of `key`, with its raw data when it brings some (a period that
    /// brings none keeps the stored raw data).
    case savePeriod(SubscriptionKey, Period)
    /// A verified state as a fact of its subscription (kept once: a fact already recorded stays).
    case recordStateFact(SubscriptionKey, StateFact)
    /// A lifecycle event in the history.
    case insertEvent(LifecycleEvent)
    /// A change of the change feed, at its position.
    case appendChange(Change)
    /// A link of a subscription to an account, unless the subscription has one already.
    case insertLink(AccountLink)
    /// A link of a subscription to an account, in place of any link it had.
    case saveLink(AccountLink)
    /// A notification of the inbox marked processed, counting the attempt, unless it was
    /// rejected (kept for audit only).
    case markProcessed(store: Store, notificationID: String)
    /// The answer to an idempotency key: the request's hash and its serialized response.
    case remember(key: String, requestHash: String, response: [UInt8], at: Int64)
}
