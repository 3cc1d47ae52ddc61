import Crypto
import Foundation
public import Model
public import Wire

/// Identity changes: an account merged into another, an account deleted for a privacy request.
extension Ledger {
    /// The key account events (a merge, a deletion) carry: that of no subscription.
    public static let accountEventKey = SubscriptionKey(store: .promotional, environment: .production, storeID: "")
    /// What a deleted account's id and store references become in text that kept them.
    static let redactedText = "(deleted account)"
    /// The request hash of an idempotency record whose answer named a deleted account.
    static let deletedRecordPrefix = "deleted:"

    /// `MergeAccounts` checked and ready for the writer. Every subscription and grant linked to
    /// `from` moves to `into`, each in a change of its own (the entitlement view moves them as
    /// it moves a transfer); then one ACCOUNT_MERGED event names both. The claim policy of
    /// `LinkAccount` does not apply: a merge is the holding account's own move, not a second
    /// account's claim.
    /// `mergeAccountsWrite`, run: `actor` is who asked, for the audit trail.
    public func mergeAccounts(_ request: MergeAccountsRequest, actor: String) async throws -> MergeAccountsResponse {
        try await write(try mergeAccountsWrite(request, actor: actor))
    }

    func mergeAccountsWrite(_ request: MergeAccountsRequest, actor: String) throws -> WriteBody<
        MergeAccountsResponse
    > {
        try Self.check(request.idempotencyKey, "idempotency_key", max: Self.maxIdempotencyKeyBytes)
        try Self.check(request.fromAccountID, "from_account_id", max: Self.maxIDBytes)
        try Self.check(request.intoAccountID, "into_account_id", max: Self.maxIDBytes)
        guard request.fromAccountID != request.intoAccountID else {
            throw LedgerError.invalidArgument("from_account_id and into_account_id are the same account")
        }
        let hash = Digest.sha256Hex(request.serialized())
        let at = now()
        return { tx in
            if let replay = try LedgerStore(tx).replay(request.idempotencyKey, hash, as: MergeAccountsResponse.self) {
                return replay
            }
            var moved: [SubscriptionKey] = []
            for held in try Self.holdings(tx, of: request.fromAccountID) {
                let position = try LedgerStore(tx).nextPosition()
                let link = AccountLink(
                    accountID: request.intoAccountID, key: held.key, storeAccountRef: held.storeAccountRef,
                    linkedTimeMilliseconds: at)
                try Self.saveLink(tx, link)
                var subscription = try LedgerStore(tx).subscriptionRow(held.key)
                if subscription != nil {
                    subscription!.accountID = request.intoAccountID
                    try LedgerStore(tx).saveSubscription(subscription!, position: position)
                }
                try LedgerStore(tx).appendChange(
                    Change(
                        position: position, committedTimeMilliseconds: at, kind: .link, subscription: subscription,
                        link: link))
                moved.append(held.key)
            }
            let position = try LedgerStore(tx).nextPosition()
            let event = LifecycleEvent(
                position: position, key: Self.accountEventKey, kind: .accountMerged, storeTimeMilliseconds: at,
                verifiedTimeMilliseconds: at, accountID: request.intoAccountID,
                otherAccountID: request.fromAccountID,
                detail: "\(moved.count) subscription\(moved.count == 1 ? "" : "s") moved", actor: actor)
            try LedgerStore(tx).insertEvent(event)
            try LedgerStore(tx).appendChange(
                Change(position: position, committedTimeMilliseconds: at, kind: .account, events: [event]))
            let response = MergeAccountsResponse(moved: moved, position: position)
            try LedgerStore(tx).remember(request.idempotencyKey, hash, response, at: at)
            return response
        }
    }

    /// What an account holds: its links, and any subscription that names it without one.
    static func holdings(_ tx: any LedgerTransaction, of account: String) throws -> [(
        key: SubscriptionKey, storeAccountRef: String?
    )] {
        let links = try tx.query(
            """
            SELECT store, environment, store_id, account_id, store_account_ref, linked_ms FROM links
            WHERE account_id = $1 ORDER BY store, environment, store_id
            """, [.text(account)])
        var held = try (0..<links.count).map { index in
            let link = try LedgerStore.link(links, index)
            return (key: link.key, storeAccountRef: link.storeAccountRef)
        }
        let linked = Set(held.map(\.key))
        let rows = try tx.query(
            "SELECT state FROM subscriptions WHERE account_id = $1 ORDER BY store, environment, store_id",
            [.text(account)])
        for index in 0..<rows.count {
            let subscription = try LedgerStore.decode(Subscription.self, rows.blob(index, "state"))
            if !linked.contains(subscription.key) {
                held.append((subscription.key, subscription.storeAccountRef))
            }
        }
        return held
    }

    /// `DeleteAccount` checked and ready for the writer.
    ///
    /// 1. Every link of the account goes, each in an UNLINK change whose subscription names no
    ///    account, so the entitlement view lets go of it (and, holding nothing, of the account).
    ///    The current rows lose the account id and the store's account references (Apple
    ///    appAccountToken, Google obfuscated ids); a grant of the account is revoked.
    ///    The ids of accounts merged into it go the same way (they were the same person's).
    /// 2. History: the account's events and those of its subscriptions lose the id, the
    ///    references and their raw store data (a signed payload carries the store reference and
    ///    cannot be edited without breaking its signature, so it goes whole); so do the
    ///    subscriptions' recorded periods and the inbox entries they came from.
    /// 3. The change feed's stored changes that name the account or a reference are rewritten
    ///    without them; idempotency records whose answers name them keep their key but not the
    ///    answer (a retry is refused, not re-run).
    ///    The event log's entries lose them the same way, and the access announced to the
    ///    account is forgotten.
    /// 4. One ACCOUNT_DELETED event, naming no account, records that it happened and who asked.
    ///
    /// What stays: every subscription, period and event under its store id, with its times,
    /// states, products and prices — the store's financial facts.
    /// `deleteAccountWrite`, run: `actor` is who asked, for the audit trail.
    public func deleteAccount(_ request: DeleteAccountRequest, actor: String) async throws -> DeleteAccountResponse {
        try await write(try deleteAccountWrite(request, actor: actor))
    }

    func deleteAccountWrite(_ request: DeleteAccountRequest, actor: String) throws -> WriteBody<
        DeleteAccountResponse
    > {
        try Self.check(request.accountID, "account_id", max: Self.maxIDBytes)
        let account = request.accountID
        let at = now()
        let dialect = database.dialect
        return { tx in
            let held = try Self.holdings(tx, of: account)
            var references = Set(held.compactMap(\.storeAccountRef).filter { !$0.isEmpty })
            var subscriptions: [Subscription] = []
            for item in held {
                if let subscription = try LedgerStore(tx).subscriptionRow(item.key) {
                    if let reference = subscription.storeAccountRef, !reference.isEmpty { references.insert(reference) }
                    subscriptions.append(subscription)
                }
            }
            let redaction = Redaction(
                names: references.union(try Self.mergedAliases(tx, of: account)).union([account]))
            for item in held {
                let position = try LedgerStore(tx).nextPosition()
                try tx.enqueue(
                    "DELETE FROM links WHERE store = $1 AND environment = $2 AND store_id = $3",
                    LedgerStore.keyParameters(item.key))
                var subscription = subscriptions.first { $0.key == item.key }
                if var current = subscription {
                    current.accountID = nil
                    current.storeAccountRef = nil
                    if current.key.store == .promotional, current.state != .revoked {
                        current.state = .revoked
                        current.revokedTimeMilliseconds = at
                        current.revocationReason = "account deleted"
                    }
                    try LedgerStore(tx).saveSubscription(current, position: position)
                    subscription = current
                }
                try LedgerStore(tx).appendChange(
                    Change(
                        position: position, committedTimeMilliseconds: at, kind: .unlink, subscription: subscription,
                        link: AccountLink(accountID: "", key: item.key, linkedTimeMilliseconds: at)))
            }
            var redacted = try Self.redactEvents(tx, redaction, keys: held.map(\.key))
            redacted += try Self.redactChanges(tx, redaction, dialect: dialect)
            redacted += try Self.redactIdempotency(tx, redaction, dialect: dialect)
            redacted += try Self.redactEventLog(tx, redaction, dialect: dialect)
            let position = try LedgerStore(tx).nextPosition()
            let event = LifecycleEvent(
                position: position, key: Self.accountEventKey, kind: .accountDeleted, storeTimeMilliseconds: at,
                verifiedTimeMilliseconds: at,
                detail: "an account was deleted: \(held.count) unlinked, \(redacted) stored entries redacted",
                actor: actor)
            try LedgerStore(tx).insertEvent(event)
            try LedgerStore(tx).appendChange(
                Change(position: position, committedTimeMilliseconds: at, kind: .account, events: [event]))
            return DeleteAccountResponse(
                unlinked: UInt32(clamping: held.count), redacted: UInt32(clamping: redacted), position: position)
        }
    }

    /// The texts a deletion removes, and how: the account's id, the ids of accounts merged into
    /// it (the same person's earlier, anonymous ids), and the store's references to them. A
    /// field that holds one of them is emptied, a text that mentions one has it replaced.
    struct Redaction {
        let names: Set<String>

        /// Every name, as the bytes a stored message would hold.
        var needles: [[UInt8]] { names.sorted().map { Array($0.utf8) } }

        func text(_ value: String?) -> String? {
            guard var value else { return nil }
            for name in names.sorted(by: { $0.utf8.count > $1.utf8.count }) where value.contains(name) {
                value = value.replacingOccurrences(of: name, with: Ledger.redactedText)
            }
            return value
        }

        func field(_ value: String?) -> String? { value.map { names.contains($0) } == true ? nil : value }

        func event(_ event: LifecycleEvent, dropRaw: Bool) -> LifecycleEvent {
            var event = event
            event.accountID = field(event.accountID)
            event.otherAccountID = field(event.otherAccountID)
            event.detail = text(event.detail)
            if dropRaw {
                event.rawPayload = nil
                event.rawTransaction = nil
                event.rawRenewalInfo = nil
            }
            return event
        }

        func subscription(_ subscription: Subscription) -> Subscription {
            var subscription = subscription
            subscription.accountID = field(subscription.accountID)
            subscription.storeAccountRef = field(subscription.storeAccountRef)
            return subscription
        }
    }

    /// The ids of the accounts merged into `account`, and into those, and so on.
    static func mergedAliases(_ tx: any LedgerTransaction, of account: String) throws -> Set<String> {
        var found: Set<String> = []
        var pending = [account]
        while let next = pending.popLast() {
            let rows = try tx.query(
                "SELECT event FROM events WHERE account_id = $1 AND other_account_id IS NOT NULL", [.text(next)])
            for index in 0..<rows.count {
                let event = try LedgerStore.decode(LifecycleEvent.self, rows.blob(index, "event"))
                guard event.kind == .accountMerged, let from = event.otherAccountID, from != account,
                    found.insert(from).inserted
                else { continue }
                pending.append(from)
            }
        }
        return found
    }

    /// Rewrites the events of the account and of `keys` (their raw data dropped), the periods'
    /// raw data of `keys`, and the raw payloads of the inbox entries those events came from.
    /// Returns the rows rewritten.
    static func redactEvents(_ tx: any LedgerTransaction, _ redaction: Redaction, keys: [SubscriptionKey]) throws
        -> Int
    {
        var rows: [(id: Int64, event: LifecycleEvent)] = []
        var seen = Set<Int64>()
        func collect(_ result: SQLRows) throws {
            for index in 0..<result.count {
                guard let id = result.int(index, "id"), seen.insert(id).inserted else { continue }
                rows.append((id, try LedgerStore.decode(LifecycleEvent.self, result.blob(index, "event"))))
            }
        }
        for name in redaction.names.sorted() {
            try collect(
                tx.query("SELECT id, event FROM events WHERE account_id = $1 OR other_account_id = $1", [.text(name)]))
        }
        for key in keys {
            try collect(
                tx.query(
                    "SELECT id, event FROM events WHERE store = $1 AND environment = $2 AND store_id = $3",
                    LedgerStore.keyParameters(key)))
        }
        let keySet = Set(keys)
        var notifications = Set<String>()
        for (id, event) in rows {
            let fromKey = keySet.contains(event.key)
            if fromKey, let notification = event.notificationID { notifications.insert(notification) }
            let clean = redaction.event(event, dropRaw: fromKey)
            try tx.enqueue(
                "UPDATE events SET account_id = $1, other_account_id = $2, event = $3 WHERE id = $4",
                [.text(clean.accountID), .text(clean.otherAccountID), .blob(clean.serialized()), .int(id)])
        }
        var count = rows.count
        for key in keys {
            let update = try tx.query(
                "UPDATE periods SET raw = NULL WHERE store = $1 AND environment = $2 AND store_id = $3 AND raw IS NOT NULL",
                LedgerStore.keyParameters(key))
            count += update.affected
        }
        for notification in notifications.sorted() {
            let stored = try tx.query(
                "SELECT store, status, attempts, last_error, entry FROM inbox WHERE notification_id = $1",
                [.text(notification)])
            for index in 0..<stored.count {
                guard let store = stored.int(index, "store").flatMap({ Store(rawValue: Int32($0)) }) else { continue }
                var entry = try LedgerStore.inboxEntry(stored, index)
                entry.rawPayload = ""
                entry.lastError = redaction.text(entry.lastError)
                try LedgerStore(tx).saveInbox(entry, store: store)
                count += 1
            }
        }
        return count
    }

    /// The condition, in `dialect`, that `column` (a blob) holds one of `needles`, with the
    /// parameters it binds from `$1`.
    static func containsAny(_ column: String, _ needles: [[UInt8]], dialect: SQLDialect) -> (String, [SQLValue]) {
        let terms = needles.indices.map { index in
            dialect == .sqlite ? "instr(\(column), $\(index + 1)) > 0" : "position($\(index + 1) in \(column)) > 0"
        }
        return (terms.joined(separator: " OR "), needles.map { .blob($0) })
    }

    /// Rewrites the stored changes whose bytes hold the account id or a reference: their
    /// subscription, link and events without them. Returns the changes rewritten.
    static func redactChanges(_ tx: any LedgerTransaction, _ redaction: Redaction, dialect: SQLDialect) throws -> Int {
        let (condition, parameters) = containsAny("change", redaction.needles, dialect: dialect)
        let rows = try tx.query("SELECT position, change FROM changes WHERE \(condition)", parameters)
        var count = 0
        for index in 0..<rows.count {
            guard let position = rows.int(index, "position") else { continue }
            let change = try LedgerStore.decode(Change.self, rows.blob(index, "change"))
            var clean = change
            clean.subscription = change.subscription.map(redaction.subscription)
            if var link = change.link {
                link.accountID = redaction.field(link.accountID) ?? ""
                link.storeAccountRef = redaction.field(link.storeAccountRef)
                clean.link = link
            }
            clean.events = change.events.map { redaction.event($0, dropRaw: false) }
            // Bytes that only looked like the id (a longer id that contains it) stay as they are.
            guard clean != change else { continue }
            try tx.enqueue(
                "UPDATE changes SET change = $1 WHERE position = $2", [.blob(clean.serialized()), .int(position)])
            count += 1
        }
        return count
    }

    /// Rewrites the logged events that name the account or a reference, and forgets the access
    /// announced to it. Returns the entries rewritten or removed.
    static func redactEventLog(_ tx: any LedgerTransaction, _ redaction: Redaction, dialect: SQLDialect) throws -> Int {
        var count = 0
        for name in redaction.names.sorted() {
            count += try tx.query("DELETE FROM access_state WHERE account_id = $1", [.text(name)]).affected
        }
        let (condition, parameters) = containsAny("event", redaction.needles, dialect: dialect)
        let rows = try tx.query("SELECT seq, event FROM event_log WHERE \(condition)", parameters)
        for index in 0..<rows.count {
            guard let sequence = rows.int(index, "seq") else { continue }
            let event = try LedgerStore.decode(Event.self, rows.blob(index, "event"))
            var clean = event
            clean.accountID = redaction.field(event.accountID)
            clean.otherAccountID = redaction.field(event.otherAccountID)
            clean.subscription = event.subscription.map(redaction.subscription)
            guard clean != event else { continue }
            try tx.enqueue(
                "UPDATE event_log SET account_id = $1, event = $2 WHERE seq = $3",
                [.text(clean.accountID), .blob(clean.serialized()), .int(sequence)])
            count += 1
        }
        return count
    }

    /// Empties the stored answers that hold the account id or a reference; their keys stay, so
    /// that a retry is refused (`replayed`) rather than run again. Returns the records emptied.
    static func redactIdempotency(_ tx: any LedgerTransaction, _ redaction: Redaction, dialect: SQLDialect) throws
        -> Int
    {
        let (condition, parameters) = containsAny("response", redaction.needles, dialect: dialect)
        let update = try tx.query(
            """
            UPDATE idempotency SET request_hash = '\(deletedRecordPrefix)' || request_hash, response = $\(parameters.count + 1)
            WHERE (\(condition)) AND request_hash NOT LIKE '\(deletedRecordPrefix)%'
            """, parameters + [.blob([])])
        return update.affected
    }
}
