import Crypto
import Model
public import Wire

/// Account links under the transfer policy.
extension LedgerAccounts {
    /// Links a subscription to an account. A claim by a second account follows the request's
    /// policy (or the configured default): transfer it, keep it with the first account, or
    /// refuse; every such claim is recorded as an event naming both accounts.
    public func linkAccount(_ request: LinkAccountRequest) async throws -> LinkAccountResponse {
        try await transactions.write(try linkAccountWrite(request))
    }

    /// `linkAccount` checked and ready for the writer (which runs the returned body).
    func linkAccountWrite(_ request: LinkAccountRequest) throws -> WriteBody<LinkAccountResponse> {
        try Ledger.check(request.idempotencyKey, "idempotency_key", max: Ledger.maxIdempotencyKeyBytes)
        guard let key = request.key else { throw LedgerError.invalidArgument("key is missing") }
        try Ledger.check(key, "key")
        try Ledger.checkSold(key.store, "key.store")
        try Ledger.check(request.accountID, "account_id", max: Ledger.maxIDBytes)
        try Ledger.checkOptional(request.storeAccountRef ?? "", "store_account_ref", max: Ledger.maxIDBytes)
        let policy = request.policy ?? defaultTransferPolicy
        if case .unknown(let number) = policy {
            throw LedgerError.invalidArgument("policy \(number) is not a transfer policy")
        }
        let hash = Digest.sha256Hex(request.serialized())
        let at = transactions.now()
        let chosen = policy
        return { tx in
            if let replay = try LedgerStore(tx).replay(request.idempotencyKey, hash, as: LinkAccountResponse.self) {
                return replay
            }
            let previous = try LedgerStore(tx).linkedAccount(key)
            var subscription = try LedgerStore(tx).subscriptionRow(key)
            let outcome: LinkOutcome
            var event = LifecycleEvent(
                key: key, kind: .accountLinked, storeTimeMilliseconds: at, verifiedTimeMilliseconds: at,
                accountID: request.accountID, otherAccountID: previous, state: subscription?.state)
            var moves = false
            switch (previous, chosen) {
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
            if outcome == .alreadyLinked {
                let response = LinkAccountResponse(
                    outcome: outcome, previousAccountID: nil, subscription: subscription,
                    position: UInt64(try LedgerStore(tx).lastPosition()))
                try LedgerStore(tx).remember(request.idempotencyKey, hash, response, at: at)
                return response
            }
            let position = try LedgerStore(tx).nextPosition()
            event.position = position
            let link = AccountLink(
                accountID: moves ? request.accountID : previous!, key: key, storeAccountRef: request.storeAccountRef,
                linkedTimeMilliseconds: at)
            if moves {
                try LedgerStore(tx).saveLink(link)
                if var moved = subscription {
                    moved.accountID = request.accountID
                    try LedgerStore(tx).saveSubscription(moved, position: position)
                    subscription = moved
                }
            }
            try LedgerStore(tx).insertEvent(event)
            try LedgerStore(tx).appendChange(
                Change(
                    position: position, committedTimeMilliseconds: at, kind: .link, subscription: subscription,
                    link: link, events: [event]))
            let response = LinkAccountResponse(
                outcome: outcome, previousAccountID: previous, subscription: subscription, position: position)
            try LedgerStore(tx).remember(request.idempotencyKey, hash, response, at: at)
            return response
        }
    }
}
