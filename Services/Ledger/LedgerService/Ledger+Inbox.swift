import Model
public import Wire

/// The inbox: notifications recorded as received, listed, marked and replayed; and the named cursors.
extension Ledger {
    /// Puts a notification in the inbox; a known (store, notification id) answers
    /// `duplicate = true` with the entry as first recorded and changes nothing.
    public func recordNotification(_ request: RecordNotificationRequest) async throws -> RecordNotificationResponse {
        try await write(try recordNotificationWrite(request))
    }

    /// `recordNotification` checked and ready for the writer (which runs the returned body).
    func recordNotificationWrite(_ request: RecordNotificationRequest) throws -> WriteBody<RecordNotificationResponse> {
        guard var entry = request.entry else { throw LedgerError.invalidArgument("entry is missing") }
        guard let entryStore = entry.store else { throw LedgerError.invalidArgument("entry.store is missing") }
        try Self.check(entry.notificationID, "entry.notification_id", max: Self.maxIDBytes)
        try Self.check(entry.notificationType, "entry.notification_type", max: Self.maxIDBytes)
        try Self.checkOptional(entry.rawPayload, "entry.raw_payload", max: Self.maxPayloadBytes)
        try Self.checkOptional(entry.subtype ?? "", "entry.subtype", max: Self.maxIDBytes)
        if let key = entry.key { try Self.check(key, "entry.key") }
        try Self.checkSold(entryStore, "entry.store")
        if entry.status == .rejected {
            try Self.check(
                entry.lastError ?? "", "entry.last_error (the reason for the rejection)", max: Self.maxErrorBytes)
        } else {
            entry.status = .pending
            entry.lastError = nil
        }
        entry.attempts = 0
        entry.receivedTimeMilliseconds = entry.receivedTimeMilliseconds ?? now()
        let recorded = entry
        return { tx in
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
        let size = try Self.pageSize(request.pageSize)
        let statuses: [InboxStatus] = request.status.map { [$0] } ?? [.pending, .failed]
        let after = try request.pageToken.map(InboxCursor.init(token:))
        return try await read { tx in
            let found = try LedgerStore(tx).inboxEntries(
                statuses: statuses, store: request.store, after: after, limit: Int(size) + 1)
            let entries = try Self.page(min(found.count, Int(size))) { index in
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

    /// Lists one store's subscriptions by state and expiry window, ordered by key.
    public func listSubscriptions(_ request: ListSubscriptionsRequest) async throws -> ListSubscriptionsResponse {
        guard let store = request.store else { throw LedgerError.invalidArgument("store is missing") }
        let size = try Self.pageSize(request.pageSize)
        let after = try request.pageToken.map(PairCursor.init(token:))
        return try await read { tx in
            let found = try LedgerStore(tx).subscriptions(
                store: store, state: request.state, expiresFrom: request.expiresAfterMilliseconds,
                expiresBefore: request.expiresBeforeMilliseconds, after: after, limit: Int(size) + 1)
            let subscriptions = try Self.page(min(found.count, Int(size))) { found[$0] }
            var next: String?
            if found.count > subscriptions.count, let last = subscriptions.last {
                next = PairCursor(number: Int64(last.key.environment.rawValue), text: last.key.storeID).token
            }
            return ListSubscriptionsResponse(subscriptions: subscriptions, nextPageToken: next)
        }
    }

    /// A cursor as stored (value 0 when never advanced).
    public func cursor(_ request: GetCursorRequest) async throws -> Cursor {
        try Self.check(request.name, "name", max: Self.maxCursorNameBytes)
        return try await read { tx in try LedgerStore(tx).cursor(request.name) }
    }

    /// Advances a cursor to `value`; a lower value leaves it where it is. The ledger's own
    /// cursors (the event log's `events.feed`, moved only by `AppendEvents`, and
    /// `ledger.access-rules`) are not a caller's to move, and a value is never negative.
    public func advanceCursor(_ request: AdvanceCursorRequest) async throws -> Cursor {
        try await write(try advanceCursorWrite(request))
    }

    func advanceCursorWrite(_ request: AdvanceCursorRequest) throws -> WriteBody<Cursor> {
        try Self.check(request.name, "name", max: Self.maxCursorNameBytes)
        for own in [Self.eventsCursor, Self.eventsStartCursor] where request.name == own {
            throw LedgerError.invalidArgument(
                "name \(own) is the event log's own cursor; the events lease and AppendEvents set it")
        }
        guard request.name != Self.accessRulesCursor else {
            throw LedgerError.invalidArgument(
                "name \(Self.accessRulesCursor) is the ledger's own cursor; it records the access rules applied")
        }
        guard request.value >= 0 else {
            throw LedgerError.invalidArgument("value \(request.value) is negative; a cursor counts up from 0")
        }
        let at = now()
        return { tx in
            try LedgerStore(tx).raiseCursor(request.name, to: request.value, at: at)
            return try LedgerStore(tx).cursor(request.name)
        }
    }

    /// Marks an entry processed or failed (with the reason); counts the attempt.
    public func markInbox(_ request: MarkInboxRequest) async throws -> MarkInboxResponse {
        try await write(try markInboxWrite(request))
    }

    /// `markInbox` checked and ready for the writer (which runs the returned body).
    func markInboxWrite(_ request: MarkInboxRequest) throws -> WriteBody<MarkInboxResponse> {
        guard let store = request.store else { throw LedgerError.invalidArgument("store is missing") }
        try Self.check(request.notificationID, "notification_id", max: Self.maxIDBytes)
        guard let status = request.status, status == .processed || status == .failed else {
            throw LedgerError.invalidArgument("status must be INBOX_STATUS_PROCESSED or INBOX_STATUS_FAILED")
        }
        if status == .failed { try Self.check(request.error ?? "", "error", max: Self.maxErrorBytes) }
        return updateInbox(store: store, notificationID: request.notificationID) { entry in
            entry.status = status
            entry.attempts += 1
            entry.lastError = status == .failed ? request.error : nil
        }
    }

    /// Puts an entry back to pending so it is processed again.
    public func replayInbox(_ request: ReplayInboxRequest) async throws -> MarkInboxResponse {
        try await write(try replayInboxWrite(request))
    }

    /// `replayInbox` checked and ready for the writer (which runs the returned body).
    func replayInboxWrite(_ request: ReplayInboxRequest) throws -> WriteBody<MarkInboxResponse> {
        guard let store = request.store else { throw LedgerError.invalidArgument("store is missing") }
        try Self.check(request.notificationID, "notification_id", max: Self.maxIDBytes)
        return updateInbox(store: store, notificationID: request.notificationID) { entry in
            entry.status = .pending
        }
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
