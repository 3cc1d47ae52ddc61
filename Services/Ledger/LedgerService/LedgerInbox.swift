import Model
import Observability
public import Wire

/// The inbox: notifications recorded as received, listed, marked and replayed.
public struct LedgerInbox: Sendable {
    let transactions: LedgerTransactions
}

extension LedgerInbox {
    /// Puts a notification in the inbox, under the trace of the call that records it; a known
    /// (store, notification id) answers `duplicate = true` with the entry as first recorded and
    /// changes nothing.
    public func recordNotification(_ request: RecordNotificationRequest) async throws -> RecordNotificationResponse {
        try await transactions.write(try recordNotificationWrite(request))
    }

    /// `recordNotification` checked and ready for the writer (which runs the returned body).
    func recordNotificationWrite(_ request: RecordNotificationRequest) throws -> WriteBody<RecordNotificationResponse> {
        guard var entry = request.entry else { throw LedgerError.invalidArgument("entry is missing") }
        guard let entryStore = entry.store else { throw LedgerError.invalidArgument("entry.store is missing") }
        try Ledger.check(entry.notificationID, "entry.notification_id", max: Ledger.maxIDBytes)
        try Ledger.check(entry.notificationType, "entry.notification_type", max: Ledger.maxIDBytes)
        try Ledger.checkOptional(entry.rawPayload, "entry.raw_payload", max: Ledger.maxPayloadBytes)
        try Ledger.checkOptional(entry.subtype ?? "", "entry.subtype", max: Ledger.maxIDBytes)
        if let key = entry.key { try Ledger.check(key, "entry.key") }
        if let authentication = entry.pushAuthentication {
            typealias Limits = PushAuthentication.Limits
            let fields = [
                (authentication.iss, Limits.iss), (authentication.email, Limits.email),
                (authentication.aud, Limits.aud), (authentication.kid, Limits.kid),
            ]
            for (value, limit) in fields { try Ledger.check(value, limit, "entry.push_authentication.\(limit.field)") }
        }
        try Ledger.checkSold(entryStore, "entry.store")
        if entry.status == .rejected {
            try Ledger.check(
                entry.lastError ?? "", "entry.last_error (the reason for the rejection)",
                max: InboxEntry.Limits.lastError.maximum)
        } else {
            entry.status = .pending
            entry.lastError = nil
        }
        entry.attempts = 0
        entry.receivedTimeMilliseconds = entry.receivedTimeMilliseconds ?? transactions.now()
        let received = entry
        return { tx in
            var recorded = received
            recorded.traceID = TraceContext.current?.traceID
            let store = LedgerStore(tx)
            if try store.insertInbox(recorded, store: entryStore) {
                return RecordNotificationResponse(duplicate: false, entry: recorded)
            }
            let existing = try store.inboxEntry(store: entryStore, notificationID: recorded.notificationID)
            return RecordNotificationResponse(duplicate: true, entry: existing)
        }
    }
    /// Lists inbox entries, oldest first; without a status, the pending and failed ones.
    public func listInbox(_ request: ListInboxRequest) async throws -> ListInboxResponse {
        let size = try Ledger.pageSize(request.pageSize)
        let statuses: [InboxStatus] = request.status.map { [$0] } ?? [.pending, .failed]
        let after = try request.pageToken.map(InboxCursor.init(token:))
        return try await transactions.read { tx in
            let found = try LedgerStore(tx).inboxEntries(
                statuses: statuses, store: request.store, after: after, limit: Int(size) + 1)
            let entries = try Ledger.page(min(found.count, Int(size))) { index in
                (found[index], found[index].serialized().count)
            }
            var next: String?
            if found.count > entries.count, let last = entries.last {
                next =
                    InboxCursor(
                        receivedMilliseconds: last.receivedTimeMilliseconds ?? 0,
                        store: Int64(last.store?.rawValue ?? 0),
                        notificationID: last.notificationID
                    ).token
            }
            return ListInboxResponse(entries: entries, nextPageToken: next)
        }
    }

    /// Marks an entry processed or failed (with the reason); counts the attempt.
    public func markInbox(_ request: MarkInboxRequest) async throws -> MarkInboxResponse {
        try await transactions.write(try markInboxWrite(request))
    }

    /// `markInbox` checked and ready for the writer (which runs the returned body).
    func markInboxWrite(_ request: MarkInboxRequest) throws -> WriteBody<MarkInboxResponse> {
        guard let store = request.store else { throw LedgerError.invalidArgument("store is missing") }
        try Ledger.check(request.notificationID, "notification_id", max: Ledger.maxIDBytes)
        guard let status = request.status, status == .processed || status == .failed else {
            throw LedgerError.invalidArgument("status must be INBOX_STATUS_PROCESSED or INBOX_STATUS_FAILED")
        }
        if status == .failed {
            try Ledger.check(request.error ?? "", "error", max: MarkInboxRequest.Limits.error.maximum)
        }
        return updateInbox(store: store, notificationID: request.notificationID) { entry in
            entry.status = status
            entry.attempts += 1
            entry.lastError = status == .failed ? request.error : nil
        }
    }

    /// Puts an entry back to pending so it is processed again; with a reason, in `actor`'s name
    /// (see `replayInboxWrite`).
    public func replayInbox(_ request: ReplayInboxRequest, actor: String = "") async throws -> MarkInboxResponse {
        try await transactions.write(try replayInboxWrite(request, actor: actor))
    }

    /// `replayInbox` checked and ready for the writer (which runs the returned body). With a
    /// reason, an operator's replay: in the same commit, the audit trail of the entry's
    /// subscription (when the entry names one) records a `storeAction` event
    /// (`REPLAY_NOTIFICATION`) naming `actor`, the reason and the notification.
    func replayInboxWrite(_ request: ReplayInboxRequest, actor: String) throws -> WriteBody<MarkInboxResponse> {
        guard let store = request.store else { throw LedgerError.invalidArgument("store is missing") }
        try Ledger.check(request.notificationID, "notification_id", max: Ledger.maxIDBytes)
        try Ledger.check(request.reason, ReplayInboxRequest.Limits.reason)
        let replay = updateInbox(store: store, notificationID: request.notificationID) { entry in
            entry.status = .pending
        }
        guard let reason = request.reason else { return replay }
        let at = transactions.now()
        return { tx in
            let before = try LedgerStore(tx).inboxEntry(store: store, notificationID: request.notificationID)
            let response = try replay(tx)
            guard let key = before.key, !key.storeID.isEmpty else { return response }
            let subscription = try LedgerStore(tx).subscriptionRow(key)
            try LedgerStore(tx).appendAuditEvent(
                LifecycleEvent(
                    key: key, kind: .storeAction, storeTimeMilliseconds: at, accountID: subscription?.accountID,
                    storeSubtype: Self.replaySubtype, notificationID: before.notificationID, state: subscription?.state,
                    detail: Self.replayDetail(before), actor: actor, reason: reason),
                at: at)
            return response
        }
    }

    /// The `storeAction` subtype of an operator's replay of an inbox entry.
    static let replaySubtype = "REPLAY_NOTIFICATION"

    /// What an operator's replay of `entry` did, for its audit event.
    static func replayDetail(_ entry: InboxEntry) -> String {
        let type = entry.notificationType + (entry.subtype.map { "/\($0)" } ?? "")
        let status = entry.status.map { "\($0)" } ?? "unknown"
        return "notification \(entry.notificationID) (\(type)) put back to pending; it was \(status) after "
            + "\(entry.attempts) attempt\(entry.attempts == 1 ? "" : "s")"
            + (entry.lastError.map { ": \($0.prefix(512))" } ?? "")
    }

    func updateInbox(
        store: Store, notificationID: String, _ change: @escaping @Sendable (inout InboxEntry) -> Void
    ) -> WriteBody<MarkInboxResponse> {
        { tx in
            var entry = try LedgerStore(tx).inboxEntry(store: store, notificationID: notificationID)
            guard entry.status != .rejected else {
                throw LedgerError.failedPrecondition(
                    "notification \(notificationID) was rejected; it is kept for audit only")
            }
            change(&entry)
            try LedgerStore(tx).saveInbox(entry, store: store)
            return MarkInboxResponse(entry: entry)
        }
    }
}
