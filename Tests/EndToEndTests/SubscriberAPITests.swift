import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// The subscriber view against the store simulator, grants, merges and deletions, through the
/// running ledger, verifier and entitlement service.
@Suite("End to end: the subscriber view, grants, merges and deletions")
struct SubscriberAPITests {
    static let ledgerService = EntitlementStack.ledgerService

    static func active(_ stack: StoreSimStack, _ account: String, products: [String] = []) async throws
        -> [ActiveSubscription]
    {
        let response: GetActiveSubscriptionsResponse = try await stack.entitlementClient.call(
            EntitlementRPC.getActiveSubscriptions.name,
            GetActiveSubscriptionsRequest(
                accountID: account, productIDs: products, atMilliseconds: try await stack.simNow()))
        return response.subscriptions
    }

    static func hasActive(_ stack: StoreSimStack, _ account: String) async throws -> Bool {
        let response: HasActiveSubscriptionsResponse = try await stack.entitlementClient.call(
            EntitlementRPC.hasActiveSubscriptions.name,
            GetActiveSubscriptionsRequest(accountID: account, atMilliseconds: try await stack.simNow()))
        return response.hasActive
    }

    /// GetActiveSubscriptions once everything the stores sent is in the view.
    static func settled(_ stack: StoreSimStack, _ account: String) async throws -> [ActiveSubscription] {
        try await stack.settle()
        return try await active(stack, account)
    }

    @Test("App Store: active, a pending downgrade, cancelled, grace, billing retry, expired; family shared")
    func appleStates() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            var listed = try await Self.settled(stack, account)
            #expect(listed.count == 1)
            let bought = try #require(listed.first)
            #expect(bought.key == SubscriptionKey(store: .apple, environment: .sandbox, storeID: original))
            #expect(bought.productID == "com.example.pro.monthly" && bought.state == .active && bought.isActive)
            #expect(bought.productKind == .autoRenewable && bought.ownership == .purchased)
            #expect(
                bought.renewal?.autoRenew == true && bought.accessUntilMilliseconds == bought.expirationMilliseconds)
            #expect(bought.managementURL == "https://apps.apple.com/account/subscriptions")
            #expect(try await Self.hasActive(stack, account))

            // An upgrade now, then a downgrade that waits for the renewal.
            try await stack.control(
                "apple/change-product", ["transactionId": original, "productId": "com.example.premium.monthly"])
            try await stack.control(
                "apple/change-product", ["transactionId": original, "productId": "com.example.pro.monthly"])
            listed = try await Self.settled(stack, account)
            #expect(listed.map(\.productID) == ["com.example.premium.monthly"])
            #expect(listed.first?.renewal?.autoRenewProductID == "com.example.pro.monthly")
            #expect(try await Self.active(stack, account, products: ["com.example.pro.monthly"]).isEmpty)

            try await stack.control("apple/cancel", ["transactionId": original])
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .cancelled && listed.first?.isActive == true)
            #expect(listed.first?.renewal?.autoRenew == false)
            try await stack.control("apple/resubscribe", ["transactionId": original])

            try await stack.control("apple/fail-payment", ["transactionId": original])
            try await stack.control("clock/advance", ["by": "+32d"])
            _ = try await stack.eventually(account, "the grace period") { $0.grant?.state == .gracePeriod }
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .gracePeriod && listed.first?.isActive == true)
            #expect(listed.first?.renewal?.graceExpiresTimeMilliseconds != nil)
            try await stack.control("clock/advance", ["by": "+16d"])
            _ = try await stack.eventually(account, "billing retry") { $0.grant?.state == .billingRetry }
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .billingRetry && listed.first?.isActive == false)
            #expect(listed.first?.renewal?.inBillingRetry == true)
            #expect(try await !Self.hasActive(stack, account))
            try await stack.control("clock/advance", ["by": "+60d"])
            _ = try await stack.eventually(account, "the expiry") { $0.grant?.state == .expired }
            #expect(try await Self.settled(stack, account).isEmpty)

            // A family member's access.
            let member = UUID().uuidString.lowercased()
            _ = try await stack.buyOnAppStore(account: member, familyShared: true)
            listed = try await Self.settled(stack, member)
            #expect(listed.map(\.ownership) == [.familyShared] && listed.first?.isActive == true)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("Google Play: active, cancelled, a pending plan change, grace, account hold, paused")
    func googleStates() async throws {
        // The verifier reads Play's states on its own clock (a cancelled subscription past its
        // expiry reads as expired): the simulator's clock starts at the real time, and runs ahead.
        let stack = try await StoreSimStack(start: nil)
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            var listed = try await Self.settled(stack, account)
            let bought = try #require(listed.first)
            #expect(listed.count == 1 && bought.key?.storeID == token && bought.key?.store == .google)
            #expect(bought.productID == "pro_sub" && bought.basePlanID != nil && bought.isActive)
            #expect(
                bought.managementURL
                    == "https://play.google.com/store/account/subscriptions?sku=pro_sub&package=com.example.app")

            try await stack.control("google/cancel", ["purchaseToken": token])
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .cancelled && listed.first?.renewal?.autoRenew == false, "\(listed)")
            try await stack.control("google/restart", ["purchaseToken": token])
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .active && listed.first?.renewal?.autoRenew == true)

            // A plan change waiting for its payment: the paid plan gives access, the new one is listed pending.
            let pending = try #require(
                try await stack.control(
                    "google/change-product", ["purchaseToken": token, "productId": "premium_sub", "mode": "pending"]
                )["purchaseToken"] as? String)
            let _: VerifyPurchaseResponse = try await stack.verifierClient.call(
                VerifierRPC.verifyGooglePurchase.name,
                VerifyGooglePurchaseRequest(
                    accountID: account, packageName: "com.example.app", productID: "premium_sub",
                    purchaseToken: pending, idempotencyKey: "verify-\(pending.prefix(40))"))
            listed = try await Self.settled(stack, account)
            // Listed by key (two purchase tokens: by their bytes).
            let ordered = [token, pending].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            #expect(listed.map(\.key?.storeID) == ordered)
            let states: [SubscriptionState] = ordered.map { $0 == token ? .active : .pending }
            #expect(listed.map(\.state) == states && listed.map(\.isActive) == ordered.map { $0 == token })
            try await stack.control("google/cancel-pending", ["purchaseToken": pending])
            listed = try await Self.settled(stack, account)
            #expect(listed.map(\.key?.storeID) == [token])

            try await stack.control("google/fail-payment", ["purchaseToken": token])
            try await stack.control("clock/advance", ["by": "+32d"])
            _ = try await stack.eventually(account, "the grace period") { $0.grant?.state == .gracePeriod }
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .gracePeriod && listed.first?.isActive == true)
            try await stack.control("clock/advance", ["by": "+8d"])
            _ = try await stack.eventually(account, "the hold") { $0.grant?.state == .accountHold }
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .accountHold && listed.first?.isActive == false)
            #expect(try await !Self.hasActive(stack, account))
            try await stack.control("google/recover", ["purchaseToken": token])
            _ = try await stack.eventually(account, "the recovery") { $0.allowed }
            try await stack.control("google/pause", ["purchaseToken": token, "for": "+30d"])
            try await stack.control("clock/advance", ["by": "+32d"])
            _ = try await stack.eventually(account, "the pause") { $0.grant?.state == .paused }
            listed = try await Self.settled(stack, account)
            #expect(listed.first?.state == .paused && listed.first?.isActive == false)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// Every change of the feed from its start.
    static func feed(_ stack: StoreSimStack) async throws -> [Change] {
        let newest: GetFeedPositionResponse = try await stack.entitlementStack.ledgerClient.call(
            "\(ledgerService)/GetFeedPosition", GetFeedPositionRequest())
        var changes: [Change] = []
        let stream = stack.entitlementStack.ledgerClient.serverStream(LedgerRPC.watchChanges, WatchChangesRequest())
        for try await message in stream {
            let change = try Change(serialized: message)
            changes.append(change)
            if change.position >= newest.position { break }
        }
        return changes
    }

    @Test(
        "grants with and without an end, revoked; a merge of an anonymous account; a deletion, in the feed and the view"
    )
    func grantsMergeAndDelete() async throws {
        let stack = try await StoreSimStack()
        do {
            let ledger = stack.entitlementStack.ledgerClient
            // Apple's appAccountToken is a UUID.
            let anonymous = UUID().uuidString.lowercased()
            let user = "user-\(UUID().uuidString.prefix(8))"
            // The anonymous account buys on both stores and gets a grant.
            let (original, _) = try await stack.buyOnAppStore(account: anonymous)
            let (token, _) = try await stack.buyOnPlay(account: anonymous)
            let week: GrantEntitlementResponse = try await ledger.call(
                LedgerRPC.grantEntitlement.name,
                GrantEntitlementRequest(
                    idempotencyKey: "welcome-\(anonymous)", accountID: anonymous, capability: "pro",
                    durationMilliseconds: 7 * 86_400_000, reason: "welcome week"))
            let forever: GrantEntitlementResponse = try await ledger.call(
                LedgerRPC.grantEntitlement.name,
                GrantEntitlementRequest(idempotencyKey: "staff-\(anonymous)", accountID: anonymous, capability: "pro"))
            let weekGrant = try #require(week.grant)
            let foreverGrant = try #require(forever.grant)
            try await stack.settle()
            // Grants are in the ledger's time; ask at it, once both have begun (the second may
            // come more than a second after the first on a loaded machine).
            let at =
                max(
                    try #require(weekGrant.purchaseTimeMilliseconds),
                    try #require(foreverGrant.purchaseTimeMilliseconds))
                + 1000
            let listing: ListEntitlementsResponse = try await stack.entitlementClient.call(
                EntitlementRPC.listEntitlements.name, ListEntitlementsRequest(accountID: anonymous, atMilliseconds: at))
            #expect(
                Set(listing.entitlements.first?.grants.compactMap(\.key?.store) ?? []) == [.promotional]
                    && listing.entitlements.first?.untilMilliseconds == nil)
            #expect(listing.entitlements.first?.grants.count == 2)
            let later: CheckAccessResponse = try await stack.entitlementClient.call(
                EntitlementRPC.checkAccess.name,
                CheckAccessRequest(accountID: anonymous, capability: "pro", atMilliseconds: at + 8 * 86_400_000))
            #expect(later.allowed && later.untilMilliseconds == nil && later.grant?.key == foreverGrant.key)
            let revoked: RevokeGrantResponse = try await ledger.call(
                LedgerRPC.revokeGrant.name, RevokeGrantRequest(grantID: foreverGrant.key.storeID, reason: "left staff"))
            #expect(revoked.revoked)
            try await stack.settle()
            let afterRevoke: CheckAccessResponse = try await stack.entitlementClient.call(
                EntitlementRPC.checkAccess.name,
                CheckAccessRequest(accountID: anonymous, capability: "pro", atMilliseconds: at + 8 * 86_400_000))
            #expect(afterRevoke.grant?.key == foreverGrant.key && afterRevoke.reason == .revoked)

            // The anonymous account signs in: everything moves to the user.
            let merged: MergeAccountsResponse = try await ledger.call(
                LedgerRPC.mergeAccounts.name,
                MergeAccountsRequest(
                    idempotencyKey: "merge-\(anonymous)", fromAccountID: anonymous, intoAccountID: user))
            #expect(merged.moved.count == 4)
            try await stack.settle()
            #expect(try await stack.eventually(user, "access after the merge") { $0.allowed }.allowed)
            #expect(try await !stack.check(anonymous, at: try await stack.simNow()).allowed)
            #expect(try await Self.active(stack, anonymous).isEmpty)
            let held = try await Self.active(stack, user)
            #expect(Set(held.compactMap(\.key?.storeID)) == [original, token])
            let mergeEvent = try #require(try await stack.history(of: user).last)
            #expect(mergeEvent.kind == .accountMerged && mergeEvent.otherAccountID == anonymous)
            #expect(mergeEvent.actor?.hasPrefix("address 127.0.0.1") == true, "\(mergeEvent)")

            // The user asks to be deleted.
            let deleted: DeleteAccountResponse = try await ledger.call(
                LedgerRPC.deleteAccount.name, DeleteAccountRequest(accountID: user))
            #expect(deleted.unlinked == 4)
            try await stack.settle()
            let afterDelete = try await stack.check(user, at: try await stack.simNow())
            #expect(!afterDelete.allowed && afterDelete.reason == .noGrant)
            #expect(try await Self.active(stack, user).isEmpty)
            // The ledger's reads do not know the id, nor the store's reference (Apple's
            // appAccountToken and Google's obfuscated id were the anonymous id).
            do {
                let _: GetAccountResponse = try await ledger.call(
                    "\(Self.ledgerService)/GetAccount", GetAccountRequest(accountID: user))
                Issue.record("GetAccount still found the deleted account")
            } catch {
                #expect(error.code == .notFound)
            }
            let userHistory = try await stack.history(of: user)
            let anonymousHistory = try await stack.history(of: anonymous)
            #expect(userHistory.isEmpty && anonymousHistory.isEmpty)
            let feed = try await Self.feed(stack)
            for change in feed {
                let bytes = String(decoding: change.serialized(), as: UTF8.self)
                #expect(!bytes.contains(user) && !bytes.contains(anonymous), "change \(change.position)")
            }
            #expect(feed.last?.kind == .account && feed.last?.events.first?.kind == .accountDeleted)
            #expect(feed.last?.events.first?.accountID == nil)
            for key in [
                SubscriptionKey(store: .apple, environment: .sandbox, storeID: original),
                SubscriptionKey(store: .google, environment: .production, storeID: token),
            ] {
                let stored: GetSubscriptionResponse = try await ledger.call(
                    "\(Self.ledgerService)/GetSubscription", GetSubscriptionRequest(key: key))
                #expect(stored.subscription?.accountID == nil && stored.subscription?.storeAccountRef == nil)
                #expect(!stored.periods.isEmpty && stored.periods.allSatisfy { $0.raw == nil })
                let events: GetHistoryResponse = try await ledger.call(
                    "\(Self.ledgerService)/GetHistory", GetHistoryRequest(key: key, pageSize: 500))
                for event in events.events {
                    #expect(event.rawPayload == nil && event.rawTransaction == nil && event.rawRenewalInfo == nil)
                    let text = String(decoding: event.serialized(), as: UTF8.self)
                    #expect(!text.contains(user) && !text.contains(anonymous))
                }
            }
            let inbox: ListInboxResponse = try await ledger.call(
                "\(Self.ledgerService)/ListInbox", ListInboxRequest(status: .processed, pageSize: 500))
            #expect(!inbox.entries.isEmpty && inbox.entries.allSatisfy { $0.rawPayload.isEmpty })
            // A snapshot, as a new entitlement instance loads it, holds neither id either.
            let snapshot = ledger.serverStream(LedgerRPC.snapshot, SnapshotRequest())
            for try await chunk in snapshot {
                let text = String(decoding: chunk, as: UTF8.self)
                #expect(!text.contains(user) && !text.contains(anonymous))
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
