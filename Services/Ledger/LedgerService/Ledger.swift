import Crypto
import Foundation
public import Model
public import Wire

/// The ledger's rules over a `LedgerDatabase`: the inbox, verified states with idempotency and
/// store-time ordering, account links under a transfer policy, history, and the change feed.
/// Every method validates its input first; a refused request writes nothing.
public struct Ledger: Sendable {
    public let database: any LedgerDatabase
    /// The policy for a second account's claim when the request names none.
    public let defaultTransferPolicy: TransferPolicy
    /// The clock, injectable for tests: Unix epoch milliseconds.
    public let now: @Sendable () -> Int64
    /// Rung after every commit of this instance, for change-feed readers.
    let changeSignal = ChangeSignal()

    public init(
        database: any LedgerDatabase, defaultTransferPolicy: TransferPolicy = .transfer,
        now: (@Sendable () -> Int64)? = nil
    ) {
        self.database = database
        self.defaultTransferPolicy = defaultTransferPolicy
        self.now = now ?? { Int64(Date().timeIntervalSince1970 * 1000) }
    }

    // MARK: Limits

    static let maxIDBytes = 256
    static let maxIdempotencyKeyBytes = 128
    static let maxPayloadBytes = 64 * 1024
    static let maxErrorBytes = 4 * 1024
    static let maxEvents = 16
    static let maxPageSize: UInt32 = 500
    static let defaultPageSize: UInt32 = 100
    /// A page ends early, with a next-page token, once its entries reach this many bytes, so a
    /// reply always fits in a frame (the RPC maximum is 1 MiB by default): at least one entry
    /// is always given.
    static let maxPageBytes = 256 * 1024
    static let maxAccountRows = 1000
    static let maxCursorNameBytes = 128
    /// Periods per request, and in a subscription's state (the oldest beyond it stay in the
    /// periods table only).
    static let maxPeriods = 256
    static let maxStoredPeriodRows = 1000
    /// Periods with their raw data in a `GetSubscription` answer (about 3 KiB each, well inside
    /// a frame).
    static let maxAnsweredPeriods = 100

    // MARK: Inbox

    /// Puts a notification in the inbox; a known (store, notification id) answers
    /// `duplicate = true` with the entry as first recorded and changes nothing.
    public func recordNotification(_ request: RecordNotificationRequest) async throws -> RecordNotificationResponse {
        try await write(try recordNotificationWrite(request))
    }

    /// `recordNotification` checked and ready for the writer (which runs the returned body).
    func recordNotificationWrite(_ request: RecordNotificationRequest) throws -> WriteBody<RecordNotificationResponse> {
        guard var entry = request.entry else { throw LedgerError.invalidArgument("entry is missing") }
        guard let store = entry.store else { throw LedgerError.invalidArgument("entry.store is missing") }
        try Self.check(entry.notificationID, "entry.notification_id", max: Self.maxIDBytes)
        try Self.check(entry.notificationType, "entry.notification_type", max: Self.maxIDBytes)
        try Self.checkOptional(entry.rawPayload, "entry.raw_payload", max: Self.maxPayloadBytes)
        try Self.checkOptional(entry.subtype ?? "", "entry.subtype", max: Self.maxIDBytes)
        if let key = entry.key { try Self.check(key, "entry.key") }
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
            let inserted = try tx.query(
                """
                INSERT INTO inbox (store, notification_id, status, attempts, last_error, received_ms, entry)
                VALUES ($1, $2, $3, 0, $4, $5, $6) ON CONFLICT (store, notification_id) DO NOTHING
                """,
                [
                    .int(Int64(store.rawValue)), .text(recorded.notificationID),
                    .int(Int64((recorded.status ?? .pending).rawValue)), .text(recorded.lastError),
                    .int(recorded.receivedTimeMilliseconds ?? 0), .blob(recorded.serialized()),
                ])
            if inserted.affected == 1 { return RecordNotificationResponse(duplicate: false, entry: recorded) }
            let existing = try Self.inboxEntry(tx, store: store, notificationID: recorded.notificationID)
            return RecordNotificationResponse(duplicate: true, entry: existing)
        }
    }

    /// Lists inbox entries, oldest first; without a status, the pending and failed ones.
    public func listInbox(_ request: ListInboxRequest) async throws -> ListInboxResponse {
        let size = try Self.pageSize(request.pageSize)
        let statuses: [InboxStatus] = request.status.map { [$0] } ?? [.pending, .failed]
        let after = try request.pageToken.map(InboxCursor.init(token:))
        return try await read { tx in
            var sql =
                "SELECT received_ms, store, notification_id, status, attempts, last_error, entry FROM inbox WHERE status IN ("
            var parameters: [SQLValue] = []
            for status in statuses {
                parameters.append(.int(Int64(status.rawValue)))
                sql += (parameters.count > 1 ? ", " : "") + "$\(parameters.count)"
            }
            sql += ")"
            if let store = request.store {
                parameters.append(.int(Int64(store.rawValue)))
                sql += " AND store = $\(parameters.count)"
            }
            if let after {
                parameters += [.int(after.receivedMilliseconds), .int(after.store), .text(after.notificationID)]
                let n = parameters.count
                sql +=
                    " AND (received_ms > $\(n - 2) OR (received_ms = $\(n - 2) AND (store > $\(n - 1)"
                    + " OR (store = $\(n - 1) AND notification_id > $\(n)))))"
            }
            parameters.append(.int(Int64(size) + 1))
            sql += " ORDER BY received_ms, store, notification_id LIMIT $\(parameters.count)"
            let rows = try tx.query(sql, parameters)
            let entries = try Self.page(min(rows.count, Int(size))) { index in
                let entry = try Self.inboxEntry(rows, index)
                return (entry, entry.serialized().count)
            }
            var next: String?
            if rows.count > entries.count, let last = entries.last {
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
        let after = try request.pageToken.map(SubscriptionCursor.init(token:))
        return try await read { tx in
            var sql = "SELECT state FROM subscriptions WHERE store = $1"
            var parameters: [SQLValue] = [.int(Int64(store.rawValue))]
            func add(_ condition: String, _ value: SQLValue) {
                parameters.append(value)
                sql += " AND \(condition) $\(parameters.count)"
            }
            if let state = request.state { add("state_code =", .int(Int64(state.rawValue))) }
            if let from = request.expiresAfterMilliseconds { add("expires_ms >=", .int(from)) }
            if let until = request.expiresBeforeMilliseconds { add("expires_ms <", .int(until)) }
            if let after {
                parameters += [.int(after.environment), .text(after.storeID)]
                let n = parameters.count
                sql += " AND (environment > $\(n - 1) OR (environment = $\(n - 1) AND store_id > $\(n)))"
            }
            parameters.append(.int(Int64(size) + 1))
            sql += " ORDER BY environment, store_id LIMIT $\(parameters.count)"
            let rows = try tx.query(sql, parameters)
            let subscriptions = try Self.page(min(rows.count, Int(size))) { index in
                let stored = rows.blob(index, "state")
                return (try Self.decode(Subscription.self, stored), stored?.count ?? 0)
            }
            var next: String?
            if rows.count > subscriptions.count, let last = subscriptions.last {
                next =
                    SubscriptionCursor(environment: Int64(last.key.environment.rawValue), storeID: last.key.storeID)
                    .token
            }
            return ListSubscriptionsResponse(subscriptions: subscriptions, nextPageToken: next)
        }
    }

    /// A cursor as stored (value 0 when never advanced).
    public func cursor(_ request: GetCursorRequest) async throws -> Cursor {
        try Self.check(request.name, "name", max: Self.maxCursorNameBytes)
        return try await read { tx in try Self.cursorRow(tx, request.name) }
    }

    /// Advances a cursor to `value`; a lower value leaves it where it is.
    public func advanceCursor(_ request: AdvanceCursorRequest) async throws -> Cursor {
        try await write(try advanceCursorWrite(request))
    }

    func advanceCursorWrite(_ request: AdvanceCursorRequest) throws -> WriteBody<Cursor> {
        try Self.check(request.name, "name", max: Self.maxCursorNameBytes)
        let at = now()
        return { tx in
            try tx.query(
                """
                INSERT INTO cursors (name, value, updated_ms) VALUES ($1, $2, $3)
                ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_ms = excluded.updated_ms
                WHERE cursors.value < excluded.value
                """, [.text(request.name), .int(request.value), .int(at)])
            return try Self.cursorRow(tx, request.name)
        }
    }

    static func cursorRow(_ tx: any LedgerTransaction, _ name: String) throws -> Cursor {
        let rows = try tx.query("SELECT value, updated_ms FROM cursors WHERE name = $1", [.text(name)])
        guard !rows.isEmpty else { return Cursor(name: name) }
        return Cursor(name: name, value: rows.int(0, "value") ?? 0, updatedTimeMilliseconds: rows.int(0, "updated_ms"))
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

    private func updateInbox(
        store: Store, notificationID: String, _ change: @escaping @Sendable (inout InboxEntry) -> Void
    ) -> WriteBody<MarkInboxResponse> {
        { tx in
            var entry = try Self.inboxEntry(tx, store: store, notificationID: notificationID)
            guard entry.status != .rejected else {
                throw LedgerError.failedPrecondition(
                    "notification \(notificationID) was rejected; it is kept for audit only")
            }
            change(&entry)
            try Self.saveInbox(tx, entry, store: store)
            return MarkInboxResponse(entry: entry)
        }
    }

    // MARK: Verified state

    /// Records a verified state and its events. Idempotent by key: a retry answers the first
    /// response with `replayed`; the same key with other content is FAILED_PRECONDITION. A state
    /// older (by store time) than the one applied goes to history only (`applied = false`).
    public func recordVerifiedState(_ request: RecordVerifiedStateRequest) async throws -> RecordVerifiedStateResponse {
        try await write(try recordVerifiedStateWrite(request))
    }

    /// `recordVerifiedState` checked and ready for the writer (which runs the returned body).
    func recordVerifiedStateWrite(_ request: RecordVerifiedStateRequest) throws -> WriteBody<
        RecordVerifiedStateResponse
    > {
        try Self.check(request.idempotencyKey, "idempotency_key", max: Self.maxIdempotencyKeyBytes)
        guard var incoming = request.subscription else { throw LedgerError.invalidArgument("subscription is missing") }
        try Self.check(incoming.key, "subscription.key")
        try Self.check(incoming.productID, "subscription.product_id", max: Self.maxIDBytes)
        guard incoming.state != nil else { throw LedgerError.invalidArgument("subscription.state is missing") }
        guard (incoming.storeTimeMilliseconds ?? 0) > 0 else {
            throw LedgerError.invalidArgument(
                "subscription.store_time_ms is missing: states are ordered by the store's time")
        }
        for (value, field) in [
            (incoming.replacesStoreID, "replaces_store_id"), (incoming.replacedByStoreID, "replaced_by_store_id"),
            (incoming.storeAccountRef, "store_account_ref"), (incoming.accountID, "account_id"),
            (incoming.basePlanID, "base_plan_id"), (incoming.offerID, "offer_id"),
            (incoming.autoRenewProductID, "auto_renew_product_id"), (incoming.latestOrderID, "latest_order_id"),
            (incoming.revocationReason, "revocation_reason"), (Optional(incoming.bundleOrPackage), "bundle_or_package"),
            (request.notificationID, "notification_id"),
        ] {
            try Self.checkOptional(
                value ?? "", field == "notification_id" ? field : "subscription.\(field)", max: Self.maxIDBytes)
        }
        for (value, field) in [
            (incoming.renewalOfferID, "renewal_offer_id"), (incoming.storefront, "storefront"),
            (incoming.currency, "currency"),
        ] {
            try Self.checkOptional(value ?? "", "subscription.\(field)", max: Self.maxIDBytes)
        }
        guard incoming.renewalOffProducts.count <= 50 else {
            throw LedgerError.invalidArgument(
                "subscription.renewal_off_products has \(incoming.renewalOffProducts.count) entries; at most 50")
        }
        for (index, product) in incoming.renewalOffProducts.enumerated() {
            try Self.check(product, "subscription.renewal_off_products[\(index)]", max: Self.maxIDBytes)
        }
        for (value, field) in [
            (incoming.installmentsCommitted, "installments_committed"),
            (incoming.installmentsRemaining, "installments_remaining"),
        ] where (value ?? 0) < 0 {
            throw LedgerError.invalidArgument("subscription.\(field) is negative")
        }
        // Periods come from the request, never from the state it carries.
        incoming.periods = []
        try Self.check(request.periods)
        guard request.events.count <= Self.maxEvents else {
            throw LedgerError.invalidArgument(
                "at most \(Self.maxEvents) events per request, got \(request.events.count)")
        }
        for (index, event) in request.events.enumerated() {
            guard event.key == incoming.key else {
                throw LedgerError.invalidArgument("events[\(index)].key differs from subscription.key")
            }
            try Self.checkOptional(event.rawPayload ?? "", "events[\(index)].raw_payload", max: Self.maxPayloadBytes)
            for (value, field) in [
                (event.storeType, "store_type"), (event.storeSubtype, "store_subtype"),
                (event.notificationID, "notification_id"), (event.accountID, "account_id"),
                (event.otherAccountID, "other_account_id"),
            ] {
                try Self.checkOptional(value ?? "", "events[\(index)].\(field)", max: Self.maxIDBytes)
            }
            try Self.checkOptional(event.detail ?? "", "events[\(index)].detail", max: Self.maxErrorBytes)
            try Self.checkOptional(
                event.rawTransaction ?? "", "events[\(index)].raw_transaction", max: Self.maxPayloadBytes)
            try Self.checkOptional(
                event.rawRenewalInfo ?? "", "events[\(index)].raw_renewal_info", max: Self.maxPayloadBytes)
        }
        let hash = Digest.sha256Hex(request.serialized())
        let verifiedAt = now()
        incoming.verifiedTimeMilliseconds = incoming.verifiedTimeMilliseconds ?? verifiedAt
        let subscription = incoming
        return { tx in
            let key = subscription.key
            // One round trip for what the write depends on: the idempotency record, the
            // current state, the link and (for the first write of a batch) the newest position.
            let lookup = try tx.query(
                """
                SELECT (SELECT request_hash FROM idempotency WHERE idempotency_key = $1) AS request_hash,
                       (SELECT response FROM idempotency WHERE idempotency_key = $1) AS response,
                       (SELECT state FROM subscriptions WHERE store = $2 AND environment = $3 AND store_id = $4) AS state,
                       (SELECT account_id FROM links WHERE store = $2 AND environment = $3 AND store_id = $4) AS account_id,
                       (SELECT COALESCE(MAX(position), 0) FROM changes) AS last_position
                """, [.text(request.idempotencyKey)] + Self.keyParameters(key))
            if tx.batch.lastPosition == nil, let last = lookup.int(0, "last_position") {
                tx.batch.lastPosition = UInt64(last)
            }
            if let storedHash = lookup.text(0, "request_hash") {
                var response = try Self.replayed(
                    request.idempotencyKey, storedHash, hash, lookup.blob(0, "response"),
                    as: RecordVerifiedStateResponse.self)
                response.replayed = true
                // The same evidence processed again (an operator's replay, a retry whose commit
                // landed): the notification it resolves ends processed all the same.
                if let notificationID = request.notificationID {
                    try Self.markProcessed(tx, store: key.store, notificationID: notificationID)
                }
                return response
            }
            let current = try lookup.blob(0, "state").map { try Self.decode(Subscription.self, $0) }
            let linked = lookup.text(0, "account_id")
            // A purchase that replaced another (Google linkedPurchaseToken) continues its
            // owner's subscription: without a link of its own it takes the replaced one's.
            let replacedKey = subscription.replacesStoreID.map {
                SubscriptionKey(store: key.store, environment: key.environment, storeID: $0)
            }
            var inherited: String?
            if let replacedKey, linked == nil {
                inherited = try Self.linkedAccount(tx, replacedKey)
            }
            let account = linked ?? current?.accountID ?? inherited
            let next = StateMerge.candidate(subscription, current: current, account: account)
            let applied = StateMerge.applies(next, over: current, partial: request.partial)
            var recordedPeriods = try Self.recordPeriods(tx, key, request.periods)
            var replacedCut: [Period]?
            if applied, key.store == .google, let replacedKey, let periods = recordedPeriods {
                // Play issues a deferred change's token at the change, with no paid order until
                // the old period ends: a replacement first recorded without periods is deferred.
                let deferred = current.map { $0.replacesStoreID == replacedKey.storeID && $0.periods.isEmpty } ?? false
                (recordedPeriods, replacedCut) = try Self.replacement(
                    tx, key, periods, replacing: replacedKey, deferred: deferred)
            }
            let position = try Self.nextPosition(tx)
            let (state, saves) = StateMerge.result(
                next: next, current: current, applied: applied,
                accessPeriods: recordedPeriods.map { Self.accessPeriods($0, of: key) })
            var events: [LifecycleEvent] = []
            for var event in request.events {
                event.position = position
                event.accountID = event.accountID ?? account
                event.verifiedTimeMilliseconds = event.verifiedTimeMilliseconds ?? verifiedAt
                if event.state == nil { event.state = subscription.state }
                events.append(event)
            }
            if saves { try Self.saveSubscription(tx, state, position: position) }
            for event in events { try Self.insertEvent(tx, event) }
            // A link taken over from the replaced purchase travels in the same change.
            let inheritedLink = inherited.map {
                AccountLink(
                    accountID: $0, key: key, storeAccountRef: subscription.storeAccountRef,
                    linkedTimeMilliseconds: verifiedAt)
            }
            try Self.appendChange(
                tx,
                Change(
                    position: position, committedTimeMilliseconds: verifiedAt, kind: .subscription,
                    subscription: state, link: inheritedLink, events: events.map(Self.withoutRawData)))
            if let inherited {
                try tx.query(
                    """
                    INSERT INTO links (store, environment, store_id, account_id, store_account_ref, linked_ms)
                    VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (store, environment, store_id) DO NOTHING
                    """,
                    Self.keyParameters(key) + [.text(inherited), .text(subscription.storeAccountRef), .int(verifiedAt)])
            }
            // The replaced purchase records what replaced it (and where its access ends), in a
            // change of its own.
            if applied, let replacedKey, var replaced = try Self.subscriptionRow(tx, replacedKey),
                replaced.replacedByStoreID != key.storeID || replacedCut != nil
            {
                replaced.replacedByStoreID = key.storeID
                if let replacedCut { replaced.periods = Self.accessPeriods(replacedCut, of: replacedKey) }
                let replacedPosition = try Self.nextPosition(tx)
                try Self.saveSubscription(tx, replaced, position: replacedPosition)
                try Self.appendChange(
                    tx,
                    Change(
                        position: replacedPosition, committedTimeMilliseconds: verifiedAt, kind: .subscription,
                        subscription: replaced))
            }
            if let notificationID = request.notificationID {
                try Self.markProcessed(tx, store: key.store, notificationID: notificationID)
            }
            let response = RecordVerifiedStateResponse(
                subscription: state, applied: applied, replayed: false, position: position)
            try Self.remember(tx, request.idempotencyKey, hash, response, at: verifiedAt)
            return response
        }
    }

    // MARK: Links

    /// Links a subscription to an account. A claim by a second account follows the request's
    /// policy (or the configured default): transfer it, keep it with the first account, or
    /// refuse; every such claim is recorded as an event naming both accounts.
    public func linkAccount(_ request: LinkAccountRequest) async throws -> LinkAccountResponse {
        try await write(try linkAccountWrite(request))
    }

    /// `linkAccount` checked and ready for the writer (which runs the returned body).
    func linkAccountWrite(_ request: LinkAccountRequest) throws -> WriteBody<LinkAccountResponse> {
        try Self.check(request.idempotencyKey, "idempotency_key", max: Self.maxIdempotencyKeyBytes)
        guard let key = request.key else { throw LedgerError.invalidArgument("key is missing") }
        try Self.check(key, "key")
        try Self.check(request.accountID, "account_id", max: Self.maxIDBytes)
        try Self.checkOptional(request.storeAccountRef ?? "", "store_account_ref", max: Self.maxIDBytes)
        let policy = request.policy ?? defaultTransferPolicy
        if case .unknown(let number) = policy {
            throw LedgerError.invalidArgument("policy \(number) is not a transfer policy")
        }
        let hash = Digest.sha256Hex(request.serialized())
        let at = now()
        let chosen = policy
        return { tx in
            if let replay = try Self.replay(tx, request.idempotencyKey, hash, as: LinkAccountResponse.self) {
                return replay
            }
            let previous = try Self.linkedAccount(tx, key)
            var subscription = try Self.subscriptionRow(tx, key)
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
                    position: UInt64(try Self.lastPosition(tx)))
                try Self.remember(tx, request.idempotencyKey, hash, response, at: at)
                return response
            }
            let position = try Self.nextPosition(tx)
            event.position = position
            let link = AccountLink(
                accountID: moves ? request.accountID : previous!, key: key, storeAccountRef: request.storeAccountRef,
                linkedTimeMilliseconds: at)
            if moves {
                try tx.query(
                    """
                    INSERT INTO links (store, environment, store_id, account_id, store_account_ref, linked_ms)
                    VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (store, environment, store_id) DO UPDATE SET account_id = $4, store_account_ref = $5, linked_ms = $6
                    """,
                    Self.keyParameters(key) + [.text(request.accountID), .text(request.storeAccountRef), .int(at)])
                if var moved = subscription {
                    moved.accountID = request.accountID
                    try Self.saveSubscription(tx, moved, position: position)
                    subscription = moved
                }
            }
            try Self.insertEvent(tx, event)
            try Self.appendChange(
                tx,
                Change(
                    position: position, committedTimeMilliseconds: at, kind: .link, subscription: subscription,
                    link: link, events: [event]))
            let response = LinkAccountResponse(
                outcome: outcome, previousAccountID: previous, subscription: subscription, position: position)
            try Self.remember(tx, request.idempotencyKey, hash, response, at: at)
            return response
        }
    }

    // MARK: Reads

    public func subscription(_ key: SubscriptionKey) async throws -> Subscription {
        try Self.check(key, "key")
        let found = try await read { tx in try Self.subscriptionRow(tx, key) }
        guard let found else { throw LedgerError.notFound("no subscription \(key)") }
        return found
    }

    /// A subscription's state and, unless `stateOnly`, its latest `maxAnsweredPeriods` recorded
    /// periods, with the raw data, by start.
    public func subscriptionAndPeriods(_ key: SubscriptionKey, stateOnly: Bool = false) async throws
        -> GetSubscriptionResponse
    {
        try Self.check(key, "key")
        let found = try await read { tx in
            try Self.subscriptionRow(tx, key).map {
                GetSubscriptionResponse(
                    subscription: $0,
                    periods: stateOnly ? [] : try Self.storedPeriods(tx, key, limit: Self.maxAnsweredPeriods, raw: true)
                )
            }
        }
        guard let found else { throw LedgerError.notFound("no subscription \(key)") }
        return found
    }

    /// An account's subscriptions and links; NOT_FOUND for an account the ledger never saw.
    public func account(_ accountID: String) async throws -> GetAccountResponse {
        try Self.check(accountID, "account_id", max: Self.maxIDBytes)
        let found = try await read { tx in
            let rows = try tx.query(
                "SELECT state FROM subscriptions WHERE account_id = $1 ORDER BY store, environment, store_id LIMIT $2",
                [.text(accountID), .int(Int64(Self.maxAccountRows))])
            let subscriptions = try (0..<rows.count).map { try Self.decode(Subscription.self, rows.blob($0, "state")) }
            let linkRows = try tx.query(
                """
                SELECT store, environment, store_id, account_id, store_account_ref, linked_ms FROM links
                WHERE account_id = $1 ORDER BY store, environment, store_id LIMIT $2
                """, [.text(accountID), .int(Int64(Self.maxAccountRows))])
            let links = try (0..<linkRows.count).map { try Self.link(linkRows, $0) }
            return GetAccountResponse(accountID: accountID, subscriptions: subscriptions, links: links)
        }
        guard !found.subscriptions.isEmpty || !found.links.isEmpty else {
            throw LedgerError.notFound("no account \"\(accountID.prefix(Self.maxIDBytes))\" in the ledger")
        }
        return found
    }

    /// The audit trail of an account or a subscription, newest first.
    public func history(_ request: GetHistoryRequest) async throws -> GetHistoryResponse {
        let size = try Self.pageSize(request.pageSize)
        var filter: String
        var parameters: [SQLValue]
        switch (request.accountID, request.key) {
        case (let account?, nil):
            try Self.check(account, "account_id", max: Self.maxIDBytes)
            filter = "(account_id = $1 OR other_account_id = $1)"
            parameters = [.text(account)]
        case (nil, let key?):
            try Self.check(key, "key")
            filter = "store = $1 AND environment = $2 AND store_id = $3"
            parameters = Self.keyParameters(key)
        default:
            throw LedgerError.invalidArgument("exactly one of account_id and key must be set")
        }
        if let token = request.pageToken {
            guard let before = Int64(token), before > 0 else {
                throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
            }
            parameters.append(.int(before))
            filter += " AND id < $\(parameters.count)"
        }
        parameters.append(.int(Int64(size) + 1))
        let sql = "SELECT id, event FROM events WHERE \(filter) ORDER BY id DESC LIMIT $\(parameters.count)"
        let query = parameters
        return try await read { tx in
            let rows = try tx.query(sql, query)
            let events = try Self.page(min(rows.count, Int(size))) { index in
                let stored = rows.blob(index, "event")
                return (try Self.decode(LifecycleEvent.self, stored), stored?.count ?? 0)
            }
            let next = rows.count > events.count ? rows.int(events.count - 1, "id").map(String.init) : nil
            return GetHistoryResponse(events: events, nextPageToken: next)
        }
    }

    /// The newest committed change-feed position (0 when there is none).
    public func lastPosition() async throws -> UInt64 {
        try await read { tx in UInt64(try Self.lastPosition(tx)) }
    }

    /// Committed changes after `position`, in order, at most `limit`.
    public func changes(after position: UInt64, limit: Int) async throws -> [Change] {
        try await read { tx in
            let rows = try tx.query(
                "SELECT change FROM changes WHERE position > $1 ORDER BY position LIMIT $2",
                [.int(Int64(clamping: position)), .int(Int64(limit))])
            return try (0..<rows.count).map { try Self.decode(Change.self, rows.blob($0, "change")) }
        }
    }

    /// Where a snapshot page starts: after this subscription key.
    public struct SnapshotCursor: Sendable {
        let store: Int64
        let environment: Int64
        let storeID: String
    }

    /// One page of stored states (serialized `Subscription` messages) in key order after `after`,
    /// and the cursor for the next page (nil after the last).
    public func subscriptionPage(after: SnapshotCursor?, limit: Int) async throws -> (
        states: [[UInt8]], next: SnapshotCursor?
    ) {
        try await keyedPage(table: "subscriptions", columns: "state", after: after, limit: limit) { rows, index in
            rows.blob(index, "state") ?? []
        }
    }

    /// One page of account links in key order after `after`, and the cursor for the next page.
    public func linkPage(after: SnapshotCursor?, limit: Int) async throws -> (
        links: [AccountLink], next: SnapshotCursor?
    ) {
        try await keyedPage(
            table: "links", columns: "account_id, store_account_ref, linked_ms", after: after, limit: limit
        ) { rows, index in try Self.link(rows, index) }
    }

    /// Rows of a table keyed by (store, environment, store_id), in key order after `after`.
    private func keyedPage<T: Sendable>(
        table: String, columns: String, after: SnapshotCursor?, limit: Int,
        _ row: @escaping @Sendable (SQLRows, Int) throws -> T
    ) async throws -> ([T], SnapshotCursor?) {
        try await read { tx in
            var sql = "SELECT store, environment, store_id, \(columns) FROM \(table)"
            var parameters: [SQLValue] = []
            if let after {
                // A row-value comparison, so both engines walk the primary key from there.
                sql += " WHERE (store, environment, store_id) > ($1, $2, $3)"
                parameters = [.int(after.store), .int(after.environment), .text(after.storeID)]
            }
            parameters.append(.int(Int64(limit)))
            sql += " ORDER BY store, environment, store_id LIMIT $\(parameters.count)"
            let rows = try tx.query(sql, parameters)
            let values = try (0..<rows.count).map { try row(rows, $0) }
            guard limit > 0, rows.count == limit else { return (values, nil) }
            let last = limit - 1
            return (
                values,
                SnapshotCursor(
                    store: rows.int(last, "store") ?? 0, environment: rows.int(last, "environment") ?? 0,
                    storeID: rows.text(last, "store_id") ?? "")
            )
        }
    }

    // MARK: Storage access

    /// The transaction body of a checked write.
    typealias WriteBody<T> = @Sendable (any LedgerTransaction) throws -> T

    /// Checks a write (`prepare` throws what is wrong with the request) and runs it; `completion`
    /// runs once, on the writer thread when the write got that far.
    func perform<T: Sendable>(
        _ prepare: () throws -> WriteBody<T>, completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let body: WriteBody<T>
        do {
            body = try prepare()
        } catch {
            return completion(.failure(error))
        }
        write(body, attempt: 0, completion: completion)
    }

    private func write<T: Sendable>(_ body: @escaping WriteBody<T>) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            write(body, attempt: 0) { continuation.resume(with: $0) }
        }
    }

    /// A write, retried when it lost a race with a concurrent writer (it then finds what the
    /// other wrote, such as the idempotency key), with engine errors turned into statuses.
    private func write<T: Sendable>(
        _ body: @escaping WriteBody<T>, attempt: Int, completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        database.write(body) { [changeSignal] result in
            if case .success = result { changeSignal.notify() }
            guard case .failure(let error) = result, !(error is LedgerError) else { return completion(result) }
            switch database.classify(error) {
            case .retry? where attempt < 3: write(body, attempt: attempt + 1, completion: completion)
            case .status(let status)?: completion(.failure(status))
            default: completion(result)
            }
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (any LedgerTransaction) throws -> T) async throws -> T {
        do {
            return try await database.read(body)
        } catch let error as LedgerError {
            throw error
        } catch {
            if case .status(let status)? = database.classify(error) { throw status }
            throw error
        }
    }

    // MARK: Storage helpers

    static func keyParameters(_ key: SubscriptionKey) -> [SQLValue] {
        [.int(Int64(key.store.rawValue)), .int(Int64(key.environment.rawValue)), .text(key.storeID)]
    }

    /// The next change-feed position. Write transactions run one at a time (SQLite's single
    /// writer; on PostgreSQL the advisory lock every write batch takes first and holds until
    /// it commits), so positions become visible in order: a reader that has seen position n
    /// never later finds n − 1.
    static func nextPosition(_ tx: any LedgerTransaction) throws -> UInt64 {
        let next = try tx.batch.lastPosition.map { $0 + 1 } ?? UInt64(try lastPosition(tx) + 1)
        tx.batch.lastPosition = next
        return next
    }

    static func lastPosition(_ tx: any LedgerTransaction) throws -> Int64 {
        try tx.query("SELECT COALESCE(MAX(position), 0) AS position FROM changes").int(0, "position") ?? 0
    }

    static func appendChange(_ tx: any LedgerTransaction, _ change: Change) throws {
        try tx.enqueue(
            "INSERT INTO changes (position, committed_ms, change) VALUES ($1, $2, $3)",
            [.int(Int64(change.position)), .int(change.committedTimeMilliseconds ?? 0), .blob(change.serialized())])
    }

    static func subscriptionRow(_ tx: any LedgerTransaction, _ key: SubscriptionKey) throws -> Subscription? {
        let rows = try tx.query(
            "SELECT state FROM subscriptions WHERE store = $1 AND environment = $2 AND store_id = $3",
            keyParameters(key))
        return rows.isEmpty ? nil : try decode(Subscription.self, rows.blob(0, "state"))
    }

    static func saveSubscription(_ tx: any LedgerTransaction, _ subscription: Subscription, position: UInt64) throws {
        try tx.enqueue(
            """
            INSERT INTO subscriptions
                (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (store, environment, store_id) DO UPDATE
            SET account_id = $4, store_time_ms = $5, position = $6, state = $7, state_code = $8, expires_ms = $9
            """,
            keyParameters(subscription.key) + [
                .text(subscription.accountID), .int(subscription.storeTimeMilliseconds), .int(Int64(position)),
                .blob(subscription.serialized()), .int(subscription.state.map { Int64($0.rawValue) }),
                .int(subscription.expiresTimeMilliseconds),
            ])
    }

    /// Records each period unless the stored version of it stands (`Period.standing`). Returns
    /// every period of the subscription afterwards when any row changed, nil when none did.
    static func recordPeriods(_ tx: any LedgerTransaction, _ key: SubscriptionKey, _ periods: [Period]) throws
        -> [Period]?
    {
        guard !periods.isEmpty else { return nil }
        // Apple signs each version, so one stands; Google's versions are partial views of one
        // order and are combined.
        let google = key.store == .google
        func merge(_ a: Period, _ b: Period) -> Period { google ? Period.combined(a, b) : Period.standing(a, b) }
        var incoming: [String: Period] = [:]
        for period in periods {
            incoming[period.periodID] = incoming[period.periodID].map { merge($0, period) } ?? period
        }
        var stored: [String: Period] = [:]
        for period in try storedPeriods(tx, key) { stored[period.periodID] = period }
        var changed = false
        for (id, arriving) in incoming.sorted(by: { $0.key < $1.key }) {
            var period = arriving
            if let existing = stored[id] {
                let result = merge(existing, arriving)
                guard result.contentHash != existing.contentHash else { continue }
                // Stored versions are read without raw data: where the one that stands brings
                // none, the stored raw data stays.
                period = result
            }
            changed = true
            stored[id] = period
            var bare = period
            bare.raw = nil
            try tx.enqueue(
                """
                INSERT INTO periods (store, environment, store_id, period_id, start_ms, period, raw)
                VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (store, environment, store_id, period_id)
                DO UPDATE SET start_ms = $5, period = $6, raw = COALESCE($7, periods.raw)
                """,
                keyParameters(key) + [
                    .text(id), .int(period.startMilliseconds), .blob(bare.serialized()), .text(period.raw),
                ])
        }
        return changed ? Array(stored.values) : nil
    }

    /// Where a Google replacement that became real (an upgrade, downgrade or re-signup whose
    /// state is no longer pending) moves access from the replaced token to the new one, from
    /// the new token's recorded `periods`: an immediate change ends the replaced token's access
    /// where the new token's paid time starts (Play also expires it, but that notification may
    /// come late or never); a `deferred` one starts the new token's paid time where the
    /// replaced one's ends. Returns both tokens' recorded periods where they changed.
    static func replacement(
        _ tx: any LedgerTransaction, _ key: SubscriptionKey, _ periods: [Period],
        replacing replacedKey: SubscriptionKey,
        deferred: Bool
    ) throws -> (new: [Period], replaced: [Period]?) {
        guard try subscriptionRow(tx, replacedKey) != nil, let start = periods.map(\.startMilliseconds).min()
        else { return (periods, nil) }
        let old = try storedPeriods(tx, replacedKey)
        if !deferred {
            let cuts = old.filter { ($0.paidEnd ?? Int64.max) > start }.map { period -> Period in
                var cut = period
                cut.stoppedTimeMilliseconds = max(start, period.startMilliseconds)
                return cut
            }
            return (periods, try recordPeriods(tx, replacedKey, cuts))
        }
        guard let oldEnd = old.filter({ $0.revokedTimeMilliseconds == nil }).compactMap(\.paidEnd).max(), oldEnd > start
        else { return (periods, nil) }
        let shifted = periods.filter { $0.startMilliseconds < oldEnd }.map { period -> Period in
            var moved = period
            moved.startMilliseconds = min(oldEnd, period.paidEnd ?? oldEnd)
            return moved
        }
        return (try recordPeriods(tx, key, shifted) ?? periods, nil)
    }

    /// The periods recorded for `key`, by start (at most `limit`, the latest); with `raw`, each
    /// with the signed data it came from.
    static func storedPeriods(
        _ tx: any LedgerTransaction, _ key: SubscriptionKey, limit: Int = maxStoredPeriodRows, raw: Bool = false
    ) throws -> [Period] {
        let rows = try tx.query(
            """
            SELECT period\(raw ? ", raw" : "") FROM periods WHERE store = $1 AND environment = $2 AND store_id = $3
            ORDER BY start_ms DESC, period_id DESC LIMIT $4
            """, keyParameters(key) + [.int(Int64(limit))])
        return try (0..<rows.count).reversed().map { index in
            var period = try decode(Period.self, rows.blob(index, "period"))
            if raw { period.raw = rows.text(index, "raw") }
            return period
        }
    }

    /// `periods` of `key` as access reads them (`Period.accessPeriods`), the latest `maxPeriods`.
    static func accessPeriods(_ periods: [Period], of key: SubscriptionKey) -> [Period] {
        let access =
            key.store == .google
            ? Period.googleAccessPeriods(periods) : Period.accessPeriods(periods, clipsAtNextStart: true)
        return Array(access.suffix(maxPeriods))
    }

    static func check(_ periods: [Period]) throws {
        guard periods.count <= maxPeriods else {
            throw LedgerError.invalidArgument("at most \(maxPeriods) periods per request, got \(periods.count)")
        }
        for (index, period) in periods.enumerated() {
            let field = "periods[\(index)]"
            try check(period.periodID, "\(field).period_id", max: maxIDBytes)
            try check(period.productID, "\(field).product_id", max: maxIDBytes)
            for (value, name) in [(period.basePlanID, "base_plan_id"), (period.revocationReason, "revocation_reason")] {
                try checkOptional(value ?? "", "\(field).\(name)", max: maxIDBytes)
            }
            try checkOptional(period.raw ?? "", "\(field).raw", max: maxPayloadBytes)
            guard period.startMilliseconds > 0 else {
                throw LedgerError.invalidArgument("\(field).start_ms is missing: a period starts somewhere")
            }
            if let end = period.endMilliseconds, end < period.startMilliseconds {
                throw LedgerError.invalidArgument(
                    "\(field).end_ms \(end) is before its start_ms \(period.startMilliseconds)")
            }
        }
    }

    /// An event as the change feed carries it: the raw store data (tens of KiB for an Apple
    /// notification) stays in the history, which `GetHistory` serves.
    static func withoutRawData(_ event: LifecycleEvent) -> LifecycleEvent {
        var event = event
        event.rawPayload = nil
        event.rawTransaction = nil
        event.rawRenewalInfo = nil
        return event
    }

    /// Marks a notification processed, counting the attempt, unless it was rejected (kept for
    /// audit only).
    static func markProcessed(_ tx: any LedgerTransaction, store: Store, notificationID: String) throws {
        let update = try tx.query(
            "UPDATE inbox SET status = $1 WHERE store = $2 AND notification_id = $3 AND status <> $4",
            [
                .int(Int64(InboxStatus.processed.rawValue)), .int(Int64(store.rawValue)),
                .text(notificationID), .int(Int64(InboxStatus.rejected.rawValue)),
            ])
        if update.affected == 1 {
            var entry = try Self.inboxEntry(tx, store: store, notificationID: notificationID)
            entry.status = .processed
            entry.attempts += 1
            try Self.saveInbox(tx, entry, store: store)
        }
    }

    static func linkedAccount(_ tx: any LedgerTransaction, _ key: SubscriptionKey) throws -> String? {
        try tx.query(
            "SELECT account_id FROM links WHERE store = $1 AND environment = $2 AND store_id = $3", keyParameters(key)
        ).text(0, "account_id")
    }

    static func insertEvent(_ tx: any LedgerTransaction, _ event: LifecycleEvent) throws {
        try tx.enqueue(
            """
            INSERT INTO events (store, environment, store_id, account_id, other_account_id, position, event)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            keyParameters(event.key) + [
                .text(event.accountID), .text(event.otherAccountID), .int(Int64(event.position ?? 0)),
                .blob(event.serialized()),
            ])
    }

    static func link(_ rows: SQLRows, _ index: Int) throws -> AccountLink {
        guard let store = rows.int(index, "store").flatMap({ Store(rawValue: Int32($0)) }),
            let environment = rows.int(index, "environment").flatMap({ StoreEnvironment(rawValue: Int32($0)) }),
            let storeID = rows.text(index, "store_id"), let account = rows.text(index, "account_id")
        else { throw LedgerStorageError.corrupt("links row \(index)") }
        return AccountLink(
            accountID: account, key: SubscriptionKey(store: store, environment: environment, storeID: storeID),
            storeAccountRef: rows.text(index, "store_account_ref"), linkedTimeMilliseconds: rows.int(index, "linked_ms")
        )
    }

    static func inboxEntry(_ tx: any LedgerTransaction, store: Store, notificationID: String) throws -> InboxEntry {
        let rows = try tx.query(
            "SELECT status, attempts, last_error, entry FROM inbox WHERE store = $1 AND notification_id = $2",
            [.int(Int64(store.rawValue)), .text(notificationID)])
        guard !rows.isEmpty else {
            throw LedgerError.notFound("no inbox entry \(store)/\(notificationID.prefix(Self.maxIDBytes))")
        }
        return try inboxEntry(rows, 0)
    }

    /// The stored entry with its queue columns (status, attempts, last error) applied.
    static func inboxEntry(_ rows: SQLRows, _ index: Int) throws -> InboxEntry {
        var entry = try decode(InboxEntry.self, rows.blob(index, "entry"))
        entry.status = rows.int(index, "status").flatMap { InboxStatus(rawValue: Int32($0)) }
        entry.attempts = UInt32(clamping: rows.int(index, "attempts") ?? 0)
        entry.lastError = rows.text(index, "last_error")
        return entry
    }

    static func saveInbox(_ tx: any LedgerTransaction, _ entry: InboxEntry, store: Store) throws {
        try tx.enqueue(
            "UPDATE inbox SET status = $1, attempts = $2, last_error = $3, entry = $4 WHERE store = $5 AND notification_id = $6",
            [
                .int(Int64(entry.status?.rawValue ?? 0)), .int(Int64(entry.attempts)), .text(entry.lastError),
                .blob(entry.serialized()), .int(Int64(store.rawValue)), .text(entry.notificationID),
            ])
    }

    /// The stored answer for an idempotency key used before with the same request; throws
    /// FAILED_PRECONDITION when it was used with a different one.
    static func replay<Response: ProtoMessage>(
        _ tx: any LedgerTransaction, _ key: String, _ hash: String, as: Response.Type
    ) throws -> Response? {
        let rows = try tx.query(
            "SELECT request_hash, response FROM idempotency WHERE idempotency_key = $1", [.text(key)])
        guard let stored = rows.text(0, "request_hash") else { return nil }
        return try replayed(key, stored, hash, rows.blob(0, "response"), as: Response.self)
    }

    /// The stored answer when `storedHash` is this request's; FAILED_PRECONDITION otherwise.
    static func replayed<Response: ProtoMessage>(
        _ key: String, _ storedHash: String, _ hash: String, _ response: [UInt8]?, as: Response.Type
    ) throws -> Response {
        guard storedHash == hash else {
            throw LedgerError.failedPrecondition("idempotency key \"\(key)\" was already used with a different request")
        }
        return try decode(Response.self, response)
    }

    static func remember<Response: ProtoMessage>(
        _ tx: any LedgerTransaction, _ key: String, _ hash: String, _ response: Response, at: Int64
    ) throws {
        try tx.enqueue(
            "INSERT INTO idempotency (idempotency_key, request_hash, response, created_ms) VALUES ($1, $2, $3, $4)",
            [.text(key), .text(hash), .blob(response.serialized()), .int(at)])
    }

    static func decode<Message: ProtoMessage>(_ type: Message.Type, _ bytes: [UInt8]?) throws -> Message {
        guard let bytes else { throw LedgerStorageError.corrupt("\(Message.protoName) is missing") }
        do {
            return try Message(serialized: bytes)
        } catch {
            throw LedgerStorageError.corrupt("\(Message.protoName): \(error.message)")
        }
    }

    // MARK: Validation

    static func check(_ value: String, _ field: String, max: Int) throws {
        guard !value.isEmpty else { throw LedgerError.invalidArgument("\(field) is missing") }
        try checkOptional(value, field, max: max)
    }

    static func checkOptional(_ value: String, _ field: String, max: Int) throws {
        guard value.utf8.count <= max else {
            throw LedgerError.invalidArgument("\(field) is \(value.utf8.count) bytes; at most \(max) are allowed")
        }
    }

    static func check(_ key: SubscriptionKey, _ field: String) throws {
        try check(key.storeID, "\(field).store_id", max: maxIDBytes)
    }

    /// The first of `count` rows, read by `row` (a value and its size in bytes), that fit in
    /// `maxPageBytes`: at least one. A caller whose rows ran past the page's count continues
    /// after the last one it got.
    static func page<Value>(_ count: Int, _ row: (Int) throws -> (Value, Int)) throws -> [Value] {
        var values: [Value] = []
        var bytes = 0
        for index in 0..<count {
            let (value, size) = try row(index)
            bytes += size
            if !values.isEmpty && bytes > maxPageBytes { break }
            values.append(value)
        }
        return values
    }

    static func pageSize(_ requested: UInt32) throws -> UInt32 {
        if requested == 0 { return defaultPageSize }
        guard requested <= maxPageSize else {
            throw LedgerError.invalidArgument("page_size \(requested) is above the maximum of \(maxPageSize)")
        }
        return requested
    }
}

/// Where an inbox listing continues: after this entry in (received, store, id) order.
struct InboxCursor {
    let receivedMilliseconds: Int64
    let store: Int64
    let notificationID: String

    init(receivedMilliseconds: Int64, store: Int64, notificationID: String) {
        self.receivedMilliseconds = receivedMilliseconds
        self.store = store
        self.notificationID = notificationID
    }

    init(token: String) throws {
        let parts = token.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let received = Int64(parts[0]), let store = Int64(parts[1]) else {
            throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
        }
        receivedMilliseconds = received
        self.store = store
        notificationID = String(parts[2])
    }

    var token: String { "\(receivedMilliseconds):\(store):\(notificationID)" }
}

/// Where a subscription listing continues: after this (environment, store id).
struct SubscriptionCursor {
    let environment: Int64
    let storeID: String

    init(environment: Int64, storeID: String) {
        self.environment = environment
        self.storeID = storeID
    }

    init(token: String) throws {
        let parts = token.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let environment = Int64(parts[0]) else {
            throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
        }
        self.environment = environment
        storeID = String(parts[1])
    }

    var token: String { "\(environment):\(storeID)" }
}
