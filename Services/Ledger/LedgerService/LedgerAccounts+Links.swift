import Crypto
import Model
public import Wire

/// Account links under the transfer policy: the rows a link depends on (`LedgerStore.keyRows`),
/// the plan of its rules (`LinkPlan`), the plan applied.
extension LedgerAccounts {
    /// Links a subscription to an account. A claim by a second account follows the request's
    /// policy (or the configured default): transfer it, keep it with the first account, or
    /// refuse; every such claim is recorded as an event naming both accounts.
    public func linkAccount(_ request: LinkAccountRequest) async throws -> LinkAccountResponse {
        try await transactions.write(try linkAccountWrite(request))
    }

    /// A link's answer, and whether this request decided it (false for an idempotent replay).
    struct LinkDecision: Sendable {
        var response: LinkAccountResponse
        var decidedNow: Bool
    }

    /// `linkAccount` checked and ready for the writer (which runs the returned body).
    func linkAccountWrite(_ request: LinkAccountRequest) throws -> WriteBody<LinkAccountResponse> {
        let decide = try linkDecisionWrite(request)
        return { tx in try decide(tx).response }
    }

    /// `linkAccountWrite`, telling a link decided now from a replayed one.
    func linkDecisionWrite(_ request: LinkAccountRequest) throws -> WriteBody<LinkDecision> {
        try Ledger.check(request.idempotencyKey, LinkAccountRequest.Limits.idempotencyKey)
        guard let key = request.key else { throw LedgerError.invalidArgument("key is missing") }
        try Ledger.check(key, "key")
        try Ledger.checkSold(key.store, "key.store")
        try Ledger.check(request.accountID, LinkAccountRequest.Limits.accountID)
        try Ledger.checkOptional(request.storeAccountRef ?? "", "store_account_ref", max: Ledger.maxIDBytes)
        let policy = request.policy ?? defaultTransferPolicy
        if case .unknown(let number) = policy {
            throw LedgerError.invalidArgument("policy \(number) is not a transfer policy")
        }
        let intent = LinkIntent(
            request: request, key: key, policy: policy, requestHash: Digest.sha256Hex(request.serialized()),
            at: transactions.now())
        return { tx in
            let store = LedgerStore(tx)
            let fixed = try store.keyRows(idempotencyKey: request.idempotencyKey, key: key, replacedStoreID: nil)
            let rows = LinkRows(
                idempotency: fixed.idempotency, linkedAccount: fixed.linkedAccount, subscription: fixed.state,
                committedPosition: fixed.lastPosition, lastPosition: tx.batch.lastPosition ?? fixed.lastPosition)
            let plan = try LinkPlan(intent, rows: rows)
            try store.apply(plan.writes)
            return LinkDecision(response: plan.response, decidedNow: rows.idempotency == nil)
        }
    }
}
