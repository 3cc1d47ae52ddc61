import Model
import Observability
import RPC
public import Wire

/// The ledger's errors as the wire answers them: the one place a ledger error becomes a status.
extension LedgerError: RPCErrorConvertible {
    public var rpcError: RPCError { RPCError(code, message) }
}

/// The ledger's RPC methods, registered on a router.
enum LedgerMethods {
    /// How often `WatchChanges` looks for new changes when it has caught up and nothing woke it:
    /// this instance's commits wake it at once, other instances on the same PostgreSQL do not.
    static let pollInterval: Duration = .milliseconds(20)
    static let feedBatch = 256
    /// Subscriptions or links per snapshot chunk (the proto's limit is 500).
    static let snapshotPage = 500

    /// Registers the methods; `metrics`, when given, counts the conflicting claims of
    /// `LinkAccount` (`account_link_conflicts_total{outcome}`); `logger`, when given, logs each
    /// replay an operator gives a reason for (`ReplayInbox`, `ReplayDeliveries`), with the caller.
    static func register(
        on router: RPCRouter, ledger: Ledger, metrics: MetricsRegistry? = nil, logger: Logger? = nil
    ) {
        // Writes start on the event loop (decode and checks) and answer from the writer thread
        // once their batch is durable: no task between the socket and the storage writer.
        func write<Request, Response>(
            _ method: UnaryMethod<Request, Response>, limits: RPCMethodLimits = .standard,
            _ prepare: @escaping @Sendable (Request) throws -> WriteBody<Response>
        ) {
            router.deferred(method, limits: limits) { (_, request: Request, respond) in
                ledger.transactions.perform({ try prepare(request) }, completion: respond)
            }
        }
        // Writes a caller asks for in its own name (a grant, a merge, a deletion): the audit
        // trail records who.
        func audited<Request, Response>(
            _ method: UnaryMethod<Request, Response>,
            _ prepare: @escaping @Sendable (Request, String) throws -> WriteBody<Response>
        ) {
            router.deferred(method) { (context, request: Request, respond) in
                ledger.transactions.perform({ try prepare(request, context.actor) }, completion: respond)
            }
        }
        // A replay an operator gives a reason for: logged once committed, with the caller (for an
        // inbox entry that names no subscription, or a replay after a position, the only audit).
        func replay<Request, Response>(
            _ method: UnaryMethod<Request, Response>, _ reason: @escaping @Sendable (Request) -> String?,
            _ fields: @escaping @Sendable (Request) -> [String: String],
            _ prepare: @escaping @Sendable (Request, String) throws -> WriteBody<Response>
        ) {
            router.deferred(method) { (context, request: Request, respond) in
                let actor = context.actor
                ledger.transactions.perform({ try prepare(request, actor) }) { result in
                    if case .success = result, let reason = reason(request) {
                        logger?.info(
                            "operator replay", fields(request).merging(["actor": actor, "reason": reason]) { $1 })
                    }
                    respond(result)
                }
            }
        }
        replay(LedgerRPC.replayInbox, \.reason, Self.replayFields, ledger.inbox.replayInboxWrite)
        replay(LedgerRPC.replayDeliveries, \.reason, Self.replayFields, ledger.eventLog.replayDeliveriesWrite)
        audited(LedgerRPC.grantEntitlement, ledger.accounts.grantEntitlementWrite)
        audited(LedgerRPC.revokeGrant, ledger.accounts.revokeGrantWrite)
        audited(LedgerRPC.mergeAccounts, ledger.accounts.mergeAccountsWrite)
        audited(LedgerRPC.deleteAccount, ledger.accounts.deleteAccountWrite)
        router.unary(LedgerRPC.listEvents) { (_, request: ListEventsRequest) in
            try await ledger.eventLog.listEvents(request)
        }
        // A thousand events with their subscriptions' states.
        write(LedgerRPC.appendEvents, limits: .large, ledger.eventLog.appendEventsWrite)
        router.unary(LedgerRPC.getEventState) { (_, request: GetEventStateRequest) in
            try await ledger.eventLog.eventState(request)
        }
        write(LedgerRPC.acquireLease, ledger.cursors.acquireLeaseWrite)
        write(LedgerRPC.logTestEvent, ledger.eventLog.logTestEventWrite)
        router.unary(LedgerRPC.getDeliveryState) { (_, request: GetDeliveryStateRequest) in
            try await ledger.eventLog.deliveryState(request)
        }
        write(LedgerRPC.recordDeliveries, limits: .large, ledger.eventLog.recordDeliveriesWrite)
        router.unary(LedgerRPC.listDeadLetters) { (_, request: ListDeadLettersRequest) in
            try await ledger.eventLog.deadLetters(request)
        }
        // These carry the store's signed data (a notification, a state with its periods).
        write(LedgerRPC.recordNotification, limits: .large, ledger.inbox.recordNotificationWrite)
        write(LedgerRPC.recordVerifiedState, limits: .large, ledger.verifiedStates.recordVerifiedStateWrite)
        let conflicts = LinkConflictCounters(registry: metrics)
        router.deferred(LedgerRPC.linkAccount) { (_, request: LinkAccountRequest, respond) in
            ledger.transactions.perform({ try ledger.accounts.linkDecisionWrite(request) }) { result in
                // Counted once committed, and once per claim: a replay repeats an answer.
                if case .success(let decision) = result, decision.decidedNow {
                    conflicts.count(decision.response.outcome)
                }
                respond(result.map(\.response))
            }
        }
        router.unary(LedgerRPC.getSubscription) { (_, request: GetSubscriptionRequest) in
            guard let key = request.key else { throw LedgerError.invalidArgument("key is missing") }
            return try await ledger.verifiedStates.subscriptionAndPeriods(key, stateOnly: request.stateOnly)
        }
        router.unary(LedgerRPC.getAccount) { (_, request: GetAccountRequest) in
            try await ledger.accounts.account(request.accountID)
        }
        router.unary(LedgerRPC.getHistory) { (_, request: GetHistoryRequest) in
            try await ledger.accounts.history(request)
        }
        router.unary(LedgerRPC.findSubscriptions) { (_, request: FindSubscriptionsRequest) in
            try await ledger.accounts.findSubscriptions(request)
        }
        router.unary(LedgerRPC.listInbox) { (_, request: ListInboxRequest) in
            try await ledger.inbox.listInbox(request)
        }
        router.unary(LedgerRPC.findTrace) { (_, request: FindTraceRequest) in
            try await ledger.inbox.findTrace(request)
        }
        write(LedgerRPC.markInbox, ledger.inbox.markInboxWrite)
        router.unary(LedgerRPC.listSubscriptions) { (_, request: ListSubscriptionsRequest) in
            try await ledger.verifiedStates.listSubscriptions(request)
        }
        router.unary(LedgerRPC.getCursor) { (_, request: GetCursorRequest) in
            try await ledger.cursors.cursor(request)
        }
        write(LedgerRPC.advanceCursor, ledger.cursors.advanceCursorWrite)
        router.unary(LedgerRPC.getFeedPosition) { (_, _: GetFeedPositionRequest) in
            GetFeedPositionResponse(position: try await ledger.changeFeed.lastPosition())
        }
        // Page by page, the stored states sent as stored. The position is taken first: a page
        // may already hold a state newer than it, which the changes after it then bring again,
        // in order, so a reader that applies them ends exactly at the ledger's state.
        router.register(
            LedgerRPC.snapshot,
            .serverStream { _, bytes, writer in
                let request = try SnapshotRequest(serialized: bytes)
                let position = try await ledger.changeFeed.lastPosition()
                try await writer.send(
                    SnapshotChunk(expectedSubscriptions: try await ledger.changeFeed.subscriptionEstimate())
                        .serialized())
                try await ledger.changeFeed.sendSubscriptionChunks(limit: snapshotPage) { try await writer.send($0) }
                var cursor: LedgerChangeFeed.SnapshotCursor?
                repeat {
                    guard !request.statesOnly else { break }
                    let page = try await ledger.changeFeed.linkPage(after: cursor, limit: snapshotPage)
                    if !page.links.isEmpty { try await writer.send(SnapshotChunk(links: page.links).serialized()) }
                    cursor = page.next
                } while cursor != nil
                let committed =
                    position == 0
                    ? nil
                    : try await ledger.changeFeed.changes(after: position - 1, limit: 1).first?
                        .committedTimeMilliseconds
                try await writer.send(
                    SnapshotChunk(complete: true, position: position, positionCommittedMilliseconds: committed)
                        .serialized())
            })
        router.serverStream(LedgerRPC.watchChanges) {
            (_, request: WatchChangesRequest, stream: ServerStreamSender<Change>) in
            var cursor = request.after
            let newest = try await ledger.changeFeed.lastPosition()
            guard cursor <= newest else {
                // A reader ahead of the ledger (a restored backup, the wrong database) would
                // otherwise wait and then silently skip everything up to its cursor.
                throw LedgerError.failedPrecondition(
                    "after = \(cursor) is beyond the newest position \(newest) of this ledger")
            }
            while !Task.isCancelled {
                // Read the signal before the changes: a commit between the two wakes the wait.
                let seen = ledger.transactions.changeSignal.version
                let changes = try await ledger.changeFeed.changes(after: cursor, limit: feedBatch)
                for change in changes {
                    try await stream.send(change)
                    cursor = change.position
                }
                if changes.count < feedBatch {
                    await ledger.transactions.changeSignal.wait(beyond: seen, timeout: pollInterval)
                }
            }
        }
    }
}

extension LedgerMethods {
    /// What an operator's replay of an inbox entry names, for its log line.
    static func replayFields(_ request: ReplayInboxRequest) -> [String: String] {
        [
            "method": "ReplayInbox", "store": request.store.map { "\($0)" } ?? "",
            "notification_id": request.notificationID,
        ]
    }

    /// What an operator's replay of deliveries names, for its log line.
    static func replayFields(_ request: ReplayDeliveriesRequest) -> [String: String] {
        [
            "method": "ReplayDeliveries", "endpoint": request.endpoint,
            "sequence": request.sequence.map { "\($0)" } ?? "after \(request.afterSequence)",
        ]
    }
}

/// `account_link_conflicts_total{outcome}`: claims of a subscription another account holds, by
/// what the transfer policy made of them (`transferred`, `kept`, `refused`).
struct LinkConflictCounters: Sendable {
    let transferred: Counter
    let kept: Counter
    let refused: Counter

    init(registry: MetricsRegistry?) {
        func counter(_ outcome: String) -> Counter {
            registry?.counter(
                "account_link_conflicts_total",
                help: "Claims of a subscription another account holds, by what the transfer policy made of them.",
                labels: ["outcome": outcome]) ?? Counter()
        }
        transferred = counter("transferred")
        kept = counter("kept")
        refused = counter("refused")
    }

    /// Counts a link that ended in `outcome`, when that is a conflict's.
    func count(_ outcome: LinkOutcome?) {
        switch outcome {
        case .transferred?: transferred.increment()
        case .kept?: kept.increment()
        case .refused?: refused.increment()
        default: break
        }
    }
}
