import Foundation
import LedgerService
import Model
import RPC
import Testing
import Wire

/// Promotional grants, account merges and privacy deletions, on every engine.
@Suite("Ledger: grants, merges and deletions")
struct LedgerAccountTests {
    static let engines = LedgerEngine.available
    static let day: Int64 = 86_400_000

    /// An Apple subscription of `account`, linked with `reference` as its appAccountToken, with a
    /// notification in the inbox, an event and a period carrying raw signed data.
    static func subscribe(
        _ ledger: Ledger, _ account: String, _ id: String, reference: String, at: Int64
    ) async throws -> SubscriptionKey {
        let key = SubscriptionKey.apple(id)
        let notification = "n-\(id)"
        _ = try await ledger.inbox.recordNotification(
            RecordNotificationRequest(
                entry: InboxEntry(
                    store: .apple, environment: .sandbox, notificationID: notification, notificationType: "SUBSCRIBED",
                    signedTimeMilliseconds: at, key: key, rawPayload: "signed-notification-\(reference)")))
        var state = LedgerConformanceTests.state(key, .active, storeTime: at)
        state.storeAccountRef = reference
        _ = try await ledger.verifiedStates.recordVerifiedState(
            RecordVerifiedStateRequest(
                idempotencyKey: "state-\(id)", subscription: state,
                events: [
                    LifecycleEvent(
                        key: key, kind: .purchased, storeTimeMilliseconds: at, storeType: "SUBSCRIBED",
                        notificationID: notification, rawPayload: "payload-\(reference)",
                        rawTransaction: "transaction-\(reference)")
                ], notificationID: notification,
                periods: [
                    Period(
                        periodID: "t-\(id)", productID: "pro.monthly", startMilliseconds: at,
                        endMilliseconds: at + 30 * day, productKind: .autoRenewable, raw: "raw-\(reference)")
                ]))
        _ = try await ledger.accounts.linkAccount(
            LinkAccountRequest(idempotencyKey: "link-\(id)", key: key, accountID: account, storeAccountRef: reference))
        return key
    }

    static func allChanges(_ ledger: Ledger) async throws -> [Change] {
        try await ledger.changeFeed.changes(after: 0, limit: 10_000)
    }

    @Test(
        "a grant with an end and one without: recorded like a purchase, in the feed and the audit trail",
        arguments: engines)
    func grants(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let start = clock.now
            let ended = try await ledger.accounts.grantEntitlement(
                GrantEntitlementRequest(
                    idempotencyKey: "support-1", accountID: "acct-1", capability: "pro",
                    durationMilliseconds: 7 * Self.day,
                    reason: "ticket 4411"), actor: "support-desk")
            let grant = try #require(ended.grant)
            #expect(grant.key.store == .promotional && grant.key.storeID.hasPrefix("grant_"))
            #expect(grant.accountID == "acct-1" && grant.productID == "pro" && grant.state == .active)
            #expect(grant.purchaseTimeMilliseconds == start && grant.expiresTimeMilliseconds == start + 7 * Self.day)
            #expect(grant.productKind == .nonRenewing && !ended.replayed)
            let lifetime = try await ledger.accounts.grantEntitlement(
                GrantEntitlementRequest(idempotencyKey: "support-2", accountID: "acct-1", capability: "pro"),
                actor: "support-desk")
            #expect(lifetime.grant?.expiresTimeMilliseconds == nil && lifetime.grant?.productKind == .nonConsumable)
            // The same key answers the first grant; other content under it is refused.
            clock.advance(by: 1000)
            let again = try await ledger.accounts.grantEntitlement(
                GrantEntitlementRequest(
                    idempotencyKey: "support-1", accountID: "acct-1", capability: "pro",
                    durationMilliseconds: 7 * Self.day,
                    reason: "ticket 4411"), actor: "support-desk")
            #expect(again.replayed && again.grant == grant && again.position == ended.position)
            await #expect(
                throws: LedgerError.failedPrecondition(
                    "idempotency key \"support-1\" was already used with a different request")
            ) {
                _ = try await ledger.accounts.grantEntitlement(
                    GrantEntitlementRequest(idempotencyKey: "support-1", accountID: "acct-2", capability: "pro"),
                    actor: "x")
            }
            let account = try await ledger.accounts.account("acct-1")
            #expect(Set(account.links.map(\.key)) == [grant.key, try #require(lifetime.grant?.key)])
            let history = try await ledger.accounts.history(GetHistoryRequest(accountID: "acct-1"))
            #expect(history.events.map(\.kind) == [.grantCreated, .grantCreated])
            #expect(history.events.allSatisfy { $0.actor == "support-desk" })
            // Newest first: the lifetime grant was given no reason.
            #expect(history.events.map(\.reason) == [nil, "ticket 4411"])
            #expect(history.events.last?.detail == "pro until \(EpochTime.iso8601(start + 7 * Self.day)): ticket 4411")
            let changes = try await Self.allChanges(ledger)
            #expect(changes.map(\.kind) == [.link, .link])
            #expect(changes.first?.subscription == grant && changes.first?.link?.accountID == "acct-1")

            // A revocation ends it now, once.
            clock.advance(by: Self.day)
            let revoked = try await ledger.accounts.revokeGrant(
                RevokeGrantRequest(grantID: grant.key.storeID, reason: "granted by mistake"), actor: "ops")
            #expect(revoked.revoked && revoked.grant?.state == .revoked)
            #expect(revoked.grant?.revokedTimeMilliseconds == clock.now)
            let twice = try await ledger.accounts.revokeGrant(
                RevokeGrantRequest(grantID: grant.key.storeID), actor: "ops")
            #expect(!twice.revoked && twice.grant == revoked.grant && twice.position == revoked.position)
            let revocation = try await ledger.accounts.history(GetHistoryRequest(key: grant.key)).events.first
            #expect(revocation?.kind == .grantRevoked && revocation?.actor == "ops")
            #expect(revocation?.reason == "granted by mistake" && revocation?.detail == "granted by mistake")
            await #expect(throws: LedgerError.notFound("no grant grant_nope")) {
                _ = try await ledger.accounts.revokeGrant(RevokeGrantRequest(grantID: "grant_nope"), actor: "ops")
            }
        }
    }

    @Test(
        "a grant's fields are bounded by the limits proto/ states: the longest are taken, one byte more is refused",
        arguments: engines)
    func grantLimits(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            let limits = GrantEntitlementRequest.Limits.self
            func text(_ limit: FieldLimit, _ extra: Int = 0) -> String {
                String(repeating: "x", count: limit.maximum + extra)
            }
            let longest = GrantEntitlementRequest(
                idempotencyKey: text(limits.idempotencyKey), accountID: text(limits.accountID),
                capability: text(limits.capability), reason: text(limits.reason))
            let grant = try await ledger.accounts.grantEntitlement(longest, actor: "t")
            #expect(
                grant.grant?.accountID == text(limits.accountID) && grant.grant?.productID == text(limits.capability))
            var over = longest
            over.idempotencyKey += "x"
            await #expect(throws: LedgerError.invalidArgument("idempotency_key is 129 bytes; at most 128 are allowed"))
            {
                _ = try await ledger.accounts.grantEntitlement(over, actor: "t")
            }
            over = longest
            over.accountID += "x"
            await #expect(throws: LedgerError.invalidArgument("account_id is 257 bytes; at most 256 are allowed")) {
                _ = try await ledger.accounts.grantEntitlement(over, actor: "t")
            }
            over = longest
            over.reason = text(limits.reason, 1)
            await #expect(throws: LedgerError.invalidArgument("reason is 1025 bytes; at most 1024 are allowed")) {
                _ = try await ledger.accounts.grantEntitlement(over, actor: "t")
            }
            let revoke = RevokeGrantRequest(
                grantID: try #require(grant.grant?.key.storeID), reason: text(limits.reason, 1))
            await #expect(throws: LedgerError.invalidArgument("reason is 1025 bytes; at most 1024 are allowed")) {
                _ = try await ledger.accounts.revokeGrant(revoke, actor: "t")
            }
        }
    }

    @Test("a grant's end is checked before anything is written", arguments: engines)
    func grantChecks(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let now = clock.now
            let refused: [(GrantEntitlementRequest, String)] = [
                (
                    GrantEntitlementRequest(
                        idempotencyKey: "k", accountID: "a", capability: "pro", untilMilliseconds: now + 1,
                        durationMilliseconds: 1), "give until_ms or duration_ms, not both"
                ),
                (
                    GrantEntitlementRequest(
                        idempotencyKey: "k", accountID: "a", capability: "pro", untilMilliseconds: now),
                    "until_ms \(now) is not after now (\(now)): the grant would give nothing"
                ),
                (
                    GrantEntitlementRequest(
                        idempotencyKey: "k", accountID: "a", capability: "pro", durationMilliseconds: -5),
                    "duration_ms -5 is not between 1 and a century (3162240000000)"
                ),
                (GrantEntitlementRequest(idempotencyKey: "k", accountID: "a", capability: ""), "capability is missing"),
                (
                    GrantEntitlementRequest(
                        idempotencyKey: "k", accountID: "a", capability: String(repeating: "c", count: 65)),
                    "capability is 65 bytes; at most 64 are allowed"
                ),
            ]
            for (request, message) in refused {
                await #expect(throws: LedgerError.invalidArgument(message)) {
                    _ = try await ledger.accounts.grantEntitlement(request, actor: "t")
                }
            }
            // A grant is not a store's fact: the store's writes refuse its store.
            let grantKey = SubscriptionKey(store: .promotional, environment: .production, storeID: "grant_x")
            let storeWrites: [(String, () async throws -> Void)] = [
                (
                    "subscription.key.store",
                    {
                        _ = try await ledger.verifiedStates.recordVerifiedState(
                            LedgerConformanceTests.record(
                                "k", LedgerConformanceTests.state(grantKey, .active, storeTime: now)))
                    }
                ),
                (
                    "key.store",
                    {
                        _ = try await ledger.accounts.linkAccount(
                            LinkAccountRequest(idempotencyKey: "k", key: grantKey, accountID: "a"))
                    }
                ),
                (
                    "entry.store",
                    {
                        _ = try await ledger.inbox.recordNotification(
                            RecordNotificationRequest(
                                entry: InboxEntry(
                                    store: .promotional, environment: .production, notificationID: "n",
                                    notificationType: "X")))
                    }
                ),
            ]
            for (field, write) in storeWrites {
                await #expect(
                    throws: LedgerError.invalidArgument(
                        "\(field) is STORE_PROMOTIONAL: grants are made with GrantEntitlement, not recorded as a store's fact"
                    )
                ) { try await write() }
            }
            let changes = try await Self.allChanges(ledger)
            #expect(changes.isEmpty)
        }
    }

    @Test(
        "a merge moves every subscription and grant, in one change each, and one event names both", arguments: engines)
    func merge(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let first = try await Self.subscribe(ledger, "anon-7", "1001", reference: "token-a", at: clock.now)
            let second = try await Self.subscribe(ledger, "anon-7", "1002", reference: "token-b", at: clock.now)
            let grant = try #require(
                try await ledger.accounts.grantEntitlement(
                    GrantEntitlementRequest(idempotencyKey: "g", accountID: "anon-7", capability: "pro"), actor: "t"
                ).grant)
            let before = try await ledger.changeFeed.lastPosition()
            let merged = try await ledger.accounts.mergeAccounts(
                MergeAccountsRequest(idempotencyKey: "merge-1", fromAccountID: "anon-7", intoAccountID: "user-7"),
                actor: "app-backend")
            #expect(Set(merged.moved) == [first, second, grant.key] && merged.moved.count == 3)
            await #expect(throws: LedgerError.notFound("no account \"anon-7\" in the ledger")) {
                _ = try await ledger.accounts.account("anon-7")
            }
            let into = try await ledger.accounts.account("user-7")
            #expect(Set(into.subscriptions.map(\.key)) == [first, second, grant.key])
            #expect(into.subscriptions.allSatisfy { $0.accountID == "user-7" })
            // The store's account reference stays with the link it came with.
            #expect(into.links.first { $0.key == first }?.storeAccountRef == "token-a")
            let changes = try await ledger.changeFeed.changes(after: before, limit: 100)
            #expect(changes.map(\.kind) == [.link, .link, .link, .account])
            #expect(changes.dropLast().allSatisfy { $0.subscription?.accountID == "user-7" && $0.events.isEmpty })
            let event = try #require(changes.last?.events.first)
            #expect(event.kind == .accountMerged && event.accountID == "user-7" && event.otherAccountID == "anon-7")
            #expect(event.actor == "app-backend" && event.key == SubscriptionKey.accountEvents)
            #expect(event.position == merged.position && changes.last?.position == merged.position)
            // Both accounts' trails show it.
            #expect(
                try await ledger.accounts.history(GetHistoryRequest(accountID: "user-7")).events.first?.kind
                    == .accountMerged)
            #expect(
                try await ledger.accounts.history(GetHistoryRequest(accountID: "anon-7")).events.first?.kind
                    == .accountMerged)
            let replay = try await ledger.accounts.mergeAccounts(
                MergeAccountsRequest(idempotencyKey: "merge-1", fromAccountID: "anon-7", intoAccountID: "user-7"),
                actor: "app-backend")
            let position = try await ledger.changeFeed.lastPosition()
            #expect(replay == merged && position == merged.position)
            await #expect(
                throws: LedgerError.invalidArgument("from_account_id and into_account_id are the same account")
            ) {
                _ = try await ledger.accounts.mergeAccounts(
                    MergeAccountsRequest(idempotencyKey: "m", fromAccountID: "a", intoAccountID: "a"), actor: "t")
            }
        }
    }

    @Test(
        "a deletion unlinks everything and leaves no trace of the id or the store's reference in any read; the store's facts stay",
        arguments: engines)
    func delete(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let start = clock.now
            let key = try await Self.subscribe(ledger, "alice", "2001", reference: "ref-alice", at: start)
            // Another account whose id contains the deleted one's, and whose data must stay.
            let other = try await Self.subscribe(ledger, "alice-2", "2002", reference: "ref-other", at: start)
            let grant = try #require(
                try await ledger.accounts.grantEntitlement(
                    GrantEntitlementRequest(idempotencyKey: "g-alice", accountID: "alice", capability: "pro"),
                    actor: "t"
                ).grant)
            // A claim by another account is recorded with both ids.
            _ = try await ledger.accounts.linkAccount(
                LinkAccountRequest(idempotencyKey: "claim", key: key, accountID: "mallory", policy: .refuse))
            clock.advance(by: 1000)
            let deleted = try await ledger.accounts.deleteAccount(
                DeleteAccountRequest(accountID: "alice"), actor: "privacy-desk")
            #expect(deleted.unlinked == 2)

            // Current rows.
            await #expect(throws: LedgerError.notFound("no account \"alice\" in the ledger")) {
                _ = try await ledger.accounts.account("alice")
            }
            let kept = try await ledger.verifiedStates.subscriptionAndPeriods(key)
            #expect(kept.subscription?.accountID == nil && kept.subscription?.storeAccountRef == nil)
            #expect(kept.subscription?.state == .active && kept.subscription?.productID == "pro.monthly")
            #expect(kept.periods.map(\.periodID) == ["t-2001"] && kept.periods.allSatisfy { $0.raw == nil })
            let revokedGrant = try await ledger.verifiedStates.subscriptionAndPeriods(grant.key).subscription
            #expect(revokedGrant?.state == .revoked && revokedGrant?.accountID == nil)

            // History: nothing under the id; the subscription's events keep their facts only.
            #expect(try await ledger.accounts.history(GetHistoryRequest(accountID: "alice")).events.isEmpty)
            let events = try await ledger.accounts.history(GetHistoryRequest(key: key)).events
            #expect(events.map(\.kind) == [.other, .accountLinked, .purchased])
            for event in events {
                #expect(event.accountID != "alice" && event.otherAccountID != "alice")
                #expect(event.rawPayload == nil && event.rawTransaction == nil && event.rawRenewalInfo == nil)
                #expect(!(event.detail ?? "").contains("alice"))
            }
            #expect(events.first?.accountID == "mallory")
            #expect(events.first?.detail == "claim by mallory refused: the subscription belongs to (deleted account)")
            #expect(events.last?.storeTimeMilliseconds == start && events.last?.storeType == "SUBSCRIBED")
            let inbox = try await ledger.inbox.listInbox(ListInboxRequest(status: .processed))
            #expect(inbox.entries.first { $0.notificationID == "n-2001" }?.rawPayload == "")
            #expect(
                inbox.entries.first { $0.notificationID == "n-2002" }?.rawPayload == "signed-notification-ref-other")

            // The change feed, from its start.
            let changes = try await Self.allChanges(ledger)
            for change in changes {
                let texts =
                    [
                        change.subscription?.accountID, change.subscription?.storeAccountRef, change.link?.accountID,
                        change.link?.storeAccountRef,
                    ] + change.events.flatMap { [$0.accountID, $0.otherAccountID, $0.detail] }
                #expect(
                    !texts.contains { $0 == "alice" || $0 == "ref-alice" || ($0 ?? "").contains("belongs to alice") })
            }
            let last = try #require(changes.last)
            #expect(last.kind == .account && last.position == deleted.position)
            #expect(last.events.map(\.kind) == [.accountDeleted] && last.events.first?.accountID == nil)
            #expect(last.events.first?.actor == "privacy-desk")
            let unlinks = changes.filter { $0.kind == .unlink }
            #expect(Set(unlinks.compactMap { $0.subscription?.key }) == [key, grant.key])
            #expect(unlinks.allSatisfy { $0.subscription?.accountID == nil && $0.link?.accountID == "" })

            // An answer that named the account is not given again.
            await #expect(
                throws: LedgerError.failedPrecondition(
                    "idempotency key \"link-2001\" was used for a request about an account deleted since: it is not run again"
                )
            ) {
                _ = try await ledger.accounts.linkAccount(
                    LinkAccountRequest(
                        idempotencyKey: "link-2001", key: key, accountID: "alice", storeAccountRef: "ref-alice"))
            }

            // The other account is untouched.
            let untouched = try await ledger.accounts.account("alice-2")
            #expect(untouched.subscriptions.map(\.key) == [other])
            #expect(untouched.links.first?.storeAccountRef == "ref-other")
            let otherEvents = try await ledger.accounts.history(GetHistoryRequest(key: other)).events
            #expect(otherEvents.contains { $0.rawTransaction == "transaction-ref-other" })
            #expect(try await ledger.verifiedStates.subscriptionAndPeriods(other).periods.first?.raw == "raw-ref-other")
        }
    }
}
