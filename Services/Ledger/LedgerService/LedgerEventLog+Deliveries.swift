import Foundation
import Model
public import Wire

/// Webhook delivery state, per endpoint: written by the entitlement instance holding the
/// endpoint's lease, so that a restart or another instance resumes where delivery was.
extension LedgerEventLog {
    static let maxRetrying = 1000

    static func checkEndpoint(_ endpoint: String) throws {
        guard WebhookEndpointName.isValid(endpoint)
        else { throw LedgerError.invalidArgument("endpoint must be 1 to 64 of a-z, 0-9, _ and -") }
    }

    public func deliveryState(_ request: GetDeliveryStateRequest) async throws -> GetDeliveryStateResponse {
        try Self.checkEndpoint(request.endpoint)
        return try await transactions.read { tx in try Self.deliveryState(LedgerStore(tx), request.endpoint) }
    }

    static func deliveryState(_ store: LedgerStore, _ endpoint: String) throws -> GetDeliveryStateResponse {
        let state = try store.webhookState(endpoint)
        return GetDeliveryStateResponse(
            deliveredThrough: state.deliveredThrough, disabledMilliseconds: state.disabled,
            retrying: try store.retryingAttempts(endpoint, after: state.deliveredThrough, limit: maxRetrying),
            redelivering: try store.redeliveringAttempts(endpoint, through: state.deliveredThrough, limit: maxRetrying))
    }

    /// Throws NOT_FOUND, naming the endpoints there are, when `endpoint` has no delivery state
    /// (a mistyped name: an endpoint has state once the entitlement service delivered to it).
    static func requireDeliveryState(_ store: LedgerStore, _ endpoint: String) throws {
        let endpoints = try store.webhookEndpoints()
        guard !endpoints.contains(endpoint) else { return }
        throw LedgerError.notFound(
            "no webhook endpoint \"\(endpoint)\" has delivery state here (an endpoint has it once the entitlement "
                + "service has delivered to it); endpoints: "
                + (endpoints.isEmpty ? "none" : endpoints.joined(separator: ", ")))
    }

    public func recordDeliveries(_ request: RecordDeliveriesRequest) async throws -> RecordDeliveriesResponse {
        try await transactions.write(try recordDeliveriesWrite(request))
    }

    func recordDeliveriesWrite(_ request: RecordDeliveriesRequest) throws -> WriteBody<RecordDeliveriesResponse> {
        try Self.checkEndpoint(request.endpoint)
        try Ledger.check(request.owner, "owner", max: Ledger.maxCursorNameBytes)
        guard request.attempts.count <= Self.maxRetrying, request.delivered.count <= Self.maxRetrying else {
            throw LedgerError.invalidArgument("at most \(Self.maxRetrying) attempts and delivered entries per call")
        }
        for (index, attempt) in request.attempts.enumerated() {
            guard attempt.sequence > 0 else {
                throw LedgerError.invalidArgument("attempts[\(index)].sequence is missing")
            }
            try Ledger.checkOptional(attempt.lastError ?? "", "attempts[\(index)].last_error", max: 1024)
        }
        let at = transactions.now()
        let leaseAt = transactions.leaseNow()
        return { tx in
            let store = LedgerStore(tx)
            try LedgerCursors.checkLease(
                store, Ledger.deliveryLease(request.endpoint), owner: request.owner, at: leaseAt)
            try store.raiseDelivered(
                request.endpoint, through: request.deliveredThrough, disabledAt: request.disable ? at : nil)
            let through = try store.webhookState(request.endpoint).deliveredThrough
            for var attempt in request.attempts {
                // Only a dead letter, or a redelivery of one (at or before the delivered position, out
                // of the log's reach), keeps its event: an attempt still retrying is read again from
                // the log.
                if attempt.deadMilliseconds == nil, attempt.sequence > through { attempt.event = nil }
                try store.saveAttempt(request.endpoint, attempt)
            }
            for delivered in request.delivered {
                try store.deleteRetrying(request.endpoint, sequence: delivered.sequence)
            }
            return RecordDeliveriesResponse(deliveredThrough: through)
        }
    }

    /// Dead letters by endpoint, then sequence, a page at a time (each keeps its event, so a
    /// page also stops at the ledger's page bytes).
    public func deadLetters(_ request: ListDeadLettersRequest) async throws -> ListDeadLettersResponse {
        if let endpoint = request.endpoint { try Self.checkEndpoint(endpoint) }
        let limit = try Ledger.pageSize(request.limit)
        let after = try request.pageToken.map(PairCursor.init(token:))
        if let after { try Self.checkEndpoint(after.text) }
        return try await transactions.read { tx in
            if let endpoint = request.endpoint { try Self.requireDeliveryState(LedgerStore(tx), endpoint) }
            let rows = try LedgerStore(tx).deadLetters(
                endpoint: request.endpoint, after: after, limit: Int(limit) + 1)
            let letters = try Ledger.page(min(rows.count, Int(limit))) { index in
                let (endpoint, stored) = rows[index]
                let letter = DeadLetter(
                    endpoint: endpoint, attempt: try LedgerStore.decode(DeliveryAttempt.self, stored))
                return (letter, stored?.count ?? 0)
            }
            var next: String?
            if rows.count > letters.count, let last = letters.last {
                next = PairCursor(number: Int64(clamping: last.attempt?.sequence ?? 0), text: last.endpoint).token
            }
            return ListDeadLettersResponse(deadLetters: letters, nextPageToken: next)
        }
    }

    /// Delivers an endpoint's log again after a position, or one of its dead letters again; with
    /// a reason, in `actor`'s name (see `replayDeliveriesWrite`).
    public func replayDeliveries(_ request: ReplayDeliveriesRequest, actor: String = "") async throws
        -> GetDeliveryStateResponse
    {
        try await transactions.write(try replayDeliveriesWrite(request, actor: actor))
    }

    /// `replayDeliveries` checked and ready for the writer. After a position: the endpoint is
    /// set back to delivered through it, enabled, with no attempt after it. With `sequence`: that
    /// dead letter goes back to delivery as an attempt due at once, not tried yet (the deliverer
    /// sends it through its retries, and gives it up again past the longest wait from its next
    /// attempt), the endpoint is enabled, and with a reason the redelivery is recorded in the audit trail of its
    /// event's account (`storeAction`, `REDELIVER_WEBHOOK`) in the same commit.
    func replayDeliveriesWrite(_ request: ReplayDeliveriesRequest, actor: String) throws -> WriteBody<
        GetDeliveryStateResponse
    > {
        try Self.checkEndpoint(request.endpoint)
        try Ledger.check(request.reason, ReplayDeliveriesRequest.Limits.reason)
        guard request.sequence == nil || request.afterSequence == 0 else {
            throw LedgerError.invalidArgument("give after_sequence or sequence, not both")
        }
        let at = transactions.now()
        return { tx in
            let store = LedgerStore(tx)
            // A mistyped name would otherwise start a delivery state nobody follows.
            try Self.requireDeliveryState(store, request.endpoint)
            if let sequence = request.sequence {
                try Self.redeliver(
                    store, request.endpoint, sequence, audit: request.reason.map { (actor, $0) }, at: at)
            } else {
                try store.resetDeliveries(request.endpoint, after: request.afterSequence)
            }
            return try Self.deliveryState(store, request.endpoint)
        }
    }

    /// The `storeAction` subtype of an operator's redelivery of a webhook event.
    static let redeliverySubtype = "REDELIVER_WEBHOOK"

    /// Puts the dead letter `sequence` of `endpoint` back to delivery (NOT_FOUND when it is
    /// none) and enables the endpoint; with `audit`, records the redelivery when its event names
    /// an account or a subscription.
    static func redeliver(
        _ store: LedgerStore, _ endpoint: String, _ sequence: UInt64, audit: (actor: String, reason: String)?,
        at: Int64
    ) throws {
        guard var attempt = try store.deadLetter(endpoint, sequence: sequence) else {
            throw LedgerError.notFound(
                "sequence \(sequence) is not a dead letter of webhook endpoint \"\(endpoint)\" (ListDeadLetters lists them)"
            )
        }
        let tried = attempt.attempts
        attempt.deadMilliseconds = nil
        attempt.attempts = 0
        // Due at once; the deliverer counts the longest wait from its own next attempt (its clock
        // is the one attempts are timed by).
        attempt.firstAttemptMilliseconds = 0
        attempt.nextAttemptMilliseconds = 0
        try store.enableDeliveries(endpoint)
        try store.saveAttempt(endpoint, attempt)
        guard let audit, let event = attempt.event, event.accountID != nil || event.key != nil else { return }
        try store.appendAuditEvent(
            LifecycleEvent(
                key: event.key ?? SubscriptionKey.accountEvents, kind: .storeAction, storeTimeMilliseconds: at,
                accountID: event.accountID, storeSubtype: redeliverySubtype,
                detail: "webhook event \(event.id) (\(event.type), sequence \(sequence)) put back for delivery to "
                    + "endpoint \(endpoint), given up on after \(tried) attempts",
                actor: audit.actor, reason: audit.reason),
            at: at)
    }
}
