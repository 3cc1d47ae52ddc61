import Crypto
import Foundation
import Model
public import Wire

/// Accounts: links under the transfer policy (`LedgerAccounts+Links`), promotional grants
/// (`LedgerAccounts+Grants`), an account merged into another or deleted for a privacy request,
/// and an account's reads (its subscriptions and links, its history).
public struct LedgerAccounts: Sendable {
    let transactions: LedgerTransactions
    /// The policy for a second account's claim when the request names none.
    let defaultTransferPolicy: TransferPolicy
}

extension LedgerAccounts {
    /// `MergeAccounts` checked and ready for the writer. Every subscription and grant linked to
    /// `from` moves to `into`, each in a change of its own (the entitlement view moves them as
    /// it moves a transfer); then one ACCOUNT_MERGED event names both. The claim policy of
    /// `LinkAccount` does not apply: a merge is the holding account's own move, not a second
    /// account's claim.
    /// `mergeAccountsWrite`, run: `actor` is who asked, for the audit trail.
    public func mergeAccounts(_ request: MergeAccountsRequest, actor: String) async throws -> MergeAccountsResponse {
        try await transactions.write(try mergeAccountsWrite(request, actor: actor))
    }

    func mergeAccountsWrite(_ request: MergeAccountsRequest, actor: String) throws -> WriteBody<
        MergeAccountsResponse
    > {
        try Ledger.check(request.idempotencyKey, MergeAccountsRequest.Limits.idempotencyKey)
        try Ledger.check(request.fromAccountID, MergeAccountsRequest.Limits.fromAccountID)
        try Ledger.check(request.intoAccountID, MergeAccountsRequest.Limits.intoAccountID)
        guard request.fromAccountID != request.intoAccountID else {
            throw LedgerError.invalidArgument("from_account_id and into_account_id are the same account")
        }
        let hash = Digest.sha256Hex(request.serialized())
        let at = transactions.now()
        return { tx in
            if let replay = try LedgerStore(tx).replay(request.idempotencyKey, hash, as: MergeAccountsResponse.self) {
                return replay
            }
            var moved: [SubscriptionKey] = []
            for held in try LedgerStore(tx).holdings(of: request.fromAccountID) {
                let position = try LedgerStore(tx).nextPosition()
                let link = AccountLink(
                    accountID: request.intoAccountID, key: held.key, storeAccountRef: held.storeAccountRef,
                    linkedTimeMilliseconds: at)
                try LedgerStore(tx).saveLink(link)
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
                position: position, key: SubscriptionKey.accountEvents, kind: .accountMerged, storeTimeMilliseconds: at,
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
        try await transactions.write(try deleteAccountWrite(request, actor: actor))
    }

    func deleteAccountWrite(_ request: DeleteAccountRequest, actor: String) throws -> WriteBody<
        DeleteAccountResponse
    > {
        try Ledger.check(request.accountID, DeleteAccountRequest.Limits.accountID)
        let account = request.accountID
        let at = transactions.now()
        let dialect = transactions.database.dialect
        return { tx in
            let held = try LedgerStore(tx).holdings(of: account)
            var references = Set(held.compactMap(\.storeAccountRef).filter { !$0.isEmpty })
            var subscriptions: [Subscription] = []
            for item in held {
                if let subscription = try LedgerStore(tx).subscriptionRow(item.key) {
                    if let reference = subscription.storeAccountRef, !reference.isEmpty { references.insert(reference) }
                    subscriptions.append(subscription)
                }
            }
            let redaction = Redaction(
                names: references.union(try LedgerStore(tx).mergedAliases(of: account)).union([account]))
            for item in held {
                let position = try LedgerStore(tx).nextPosition()
                try LedgerStore(tx).deleteLink(item.key)
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
            var redacted = try LedgerStore(tx).redactEvents(redaction, keys: held.map(\.key))
            redacted += try LedgerStore(tx).redactChanges(redaction, dialect: dialect)
            redacted += try LedgerStore(tx).redactIdempotency(redaction, dialect: dialect)
            redacted += try LedgerStore(tx).redactEventLog(redaction, dialect: dialect)
            let position = try LedgerStore(tx).nextPosition()
            let event = LifecycleEvent(
                position: position, key: SubscriptionKey.accountEvents, kind: .accountDeleted,
                storeTimeMilliseconds: at,
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

    /// An account's subscriptions and links; NOT_FOUND for an account the ledger never saw.
    public func account(_ accountID: String) async throws -> GetAccountResponse {
        try Ledger.check(accountID, GetAccountRequest.Limits.accountID)
        let found = try await transactions.read { tx in
            let store = LedgerStore(tx)
            return GetAccountResponse(
                accountID: accountID,
                subscriptions: try store.subscriptions(of: accountID, limit: Ledger.maxAccountRows),
                links: try store.links(of: accountID, limit: Ledger.maxAccountRows))
        }
        guard !found.subscriptions.isEmpty || !found.links.isEmpty else {
            throw LedgerError.notFound("no account \"\(accountID.prefix(Ledger.maxIDBytes))\" in the ledger")
        }
        return found
    }

    /// The audit trail of an account or a subscription, newest first.
    public func history(_ request: GetHistoryRequest) async throws -> GetHistoryResponse {
        let size = try Ledger.pageSize(request.pageSize)
        let about: LedgerStore.HistoryFilter
        switch (request.accountID, request.key) {
        case (let account?, nil):
            try Ledger.check(account, GetHistoryRequest.Limits.accountID)
            about = .account(account)
        case (nil, let key?):
            try Ledger.check(key, "key")
            about = .subscription(key)
        default:
            throw LedgerError.invalidArgument("exactly one of account_id and key must be set")
        }
        var before: Int64?
        if let token = request.pageToken {
            guard let id = Int64(token), id > 0 else {
                throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
            }
            before = id
        }
        let start = before
        return try await transactions.read { tx in
            let rows = try LedgerStore(tx).history(about, before: start, limit: Int(size) + 1)
            let events = try Ledger.page(min(rows.count, Int(size))) { index in
                (try LedgerStore.decode(LifecycleEvent.self, rows[index].stored), rows[index].stored?.count ?? 0)
            }
            let next = rows.count > events.count ? String(rows[events.count - 1].id) : nil
            return GetHistoryResponse(events: events, nextPageToken: next)
        }
    }
}
