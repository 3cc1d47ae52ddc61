import Model
import Wire

/// A `LinkAccount` request as checked: the subscription, the policy that decides a second
/// account's claim (the request's or the ledger's default), the request's hash for
/// idempotency, and when it was made.
struct LinkIntent: Sendable {
    let request: LinkAccountRequest
    let key: SubscriptionKey
    let policy: TransferPolicy
    let requestHash: String
    let at: Int64
}

/// What a link's write depends on.
struct LinkRows: Sendable, Equatable {
    /// The request's idempotency key as recorded, nil when unused.
    var idempotency: IdempotencyRecord?
    /// The account the subscription is linked to.
    var linkedAccount: String?
    /// The subscription's stored state.
    var subscription: Subscription?
    /// The newest committed change-feed position (the answer when nothing changes).
    var committedPosition: UInt64
    /// The newest position taken in the transaction: a change goes at the next one.
    var lastPosition: UInt64
}

/// The rules of `LinkAccount` as a pure function of the request and the rows it depends on: a
/// replay answers the first response; a first link links; the same account again changes
/// nothing; a second account's claim follows the policy (transfer it, keep it with the first
/// account, refuse), every claim recorded as an event naming both accounts.
struct LinkPlan: Sendable, Equatable {
    var writes: [LedgerWrite]
    var response: LinkAccountResponse

    /// Throws FAILED_PRECONDITION when the idempotency key was used with another request.
    init(_ intent: LinkIntent, rows: LinkRows) throws {
        let request = intent.request
        let (key, at) = (intent.key, intent.at)
        if let record = rows.idempotency {
            response = try Ledger.replayed(
                request.idempotencyKey, record.requestHash, intent.requestHash, record.response,
                as: LinkAccountResponse.self)
            writes = []
            return
        }
        let previous = rows.linkedAccount
        var subscription = rows.subscription
        let outcome: LinkOutcome
        var event = LifecycleEvent(
            key: key, kind: .accountLinked, storeTimeMilliseconds: at, verifiedTimeMilliseconds: at,
            accountID: request.accountID, otherAccountID: previous, state: subscription?.state)
        var moves = false
        switch (previous, intent.policy) {
        case (nil, _):
            outcome = .linked
            moves = true
        case (request.accountID?, _):
            outcome = .alreadyLinked
        case (_, .keep):
            outcome = .kept
            event.kind = .other
            event.detail = "claim by \(request.accountID) declined: the subscription stays with \(previous!)"
        case (_, .refuse):
            outcome = .refused
            event.kind = .other
            event.detail = "claim by \(request.accountID) refused: the subscription belongs to \(previous!)"
        default:
            outcome = .transferred
            event.kind = .accountTransferred
            moves = true
        }
        func remember(_ response: LinkAccountResponse) -> LedgerWrite {
            .remember(
                key: request.idempotencyKey, requestHash: intent.requestHash, response: response.serialized(), at: at)
        }
        if outcome == .alreadyLinked {
            response = LinkAccountResponse(
                outcome: outcome, previousAccountID: nil, subscription: subscription,
                position: rows.committedPosition)
            writes = [remember(response)]
            return
        }
        let position = rows.lastPosition + 1
        event.position = position
        let link = AccountLink(
            accountID: moves ? request.accountID : previous!, key: key, storeAccountRef: request.storeAccountRef,
            linkedTimeMilliseconds: at)
        var writes: [LedgerWrite] = []
        if moves {
            writes.append(.saveLink(link))
            if var moved = subscription {
                moved.accountID = request.accountID
                writes.append(.saveSubscription(moved, position: position))
                subscription = moved
            }
        }
        writes.append(.insertEvent(event))
        writes.append(
            .appendChange(
                Change(
                    position: position, committedTimeMilliseconds: at, kind: .link, subscription: subscription,
                    link: link, events: [event])))
        response = LinkAccountResponse(
            outcome: outcome, previousAccountID: previous, subscription: subscription, position: position)
        writes.append(remember(response))
        self.writes = writes
    }
}
