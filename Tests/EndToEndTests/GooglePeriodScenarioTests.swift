import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// End to end through the store simulator, one test per wrong Google Play answer the services
/// gave before orders were periods: a pending change, a void of a past renewal, a partial refund,
/// REVOKED then EXPIRED, add-ons, a one-time product nobody configured, a test purchase.
@Suite("End to end: Google Play orders, pending changes and add-ons")
struct GooglePeriodScenarioTests {
    static let day: Int64 = 86_400_000

    static func check(_ stack: StoreSimStack, _ account: String, _ capability: String, at: Int64) async throws
        -> CheckAccessResponse
    {
        try await stack.entitlementClient.call(
            EntitlementRPC.checkAccess.name,
            CheckAccessRequest(accountID: account, capability: capability, atMilliseconds: at))
    }

    static func recorded(_ stack: StoreSimStack, _ key: SubscriptionKey) async throws -> GetSubscriptionResponse {
        try await stack.entitlementStack.ledgerClient.call(
            "\(EntitlementStack.ledgerService)/GetSubscription", GetSubscriptionRequest(key: key))
    }

    static func verify(_ stack: StoreSimStack, _ account: String, product: String, token: String) async throws
        -> VerifyPurchaseResponse
    {
        try await stack.verifierClient.call(
            VerifierRPC.verifyGooglePurchase.name,
            VerifyGooglePurchaseRequest(
                accountID: account, packageName: "com.example.app", productID: product, purchaseToken: token,
                idempotencyKey: "verify-\(token.prefix(40))"))
    }

    @Test("a pending upgrade keeps the old, paid plan; a dropped one changes nothing; a completed one moves access")
    func pendingChange() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            let pending = try #require(
                try await stack.control(
                    "google/change-product", ["purchaseToken": token, "productId": "premium_sub", "mode": "pending"]
                )["purchaseToken"] as? String)
            // The app presents the pending purchase, as Play Billing hands it over.
            let verified = try await Self.verify(stack, account, product: "premium_sub", token: pending)
            #expect(verified.subscription?.state == .pending)
            try await stack.settle()
            var now = try await stack.check(account, at: try await stack.simNow())
            #expect(now.allowed && now.grant?.key?.storeID == token && now.grant?.productID == "pro_sub")

            try await stack.control("google/cancel-pending", ["purchaseToken": pending])
            try await stack.settle()
            now = try await stack.check(account, at: try await stack.simNow())
            #expect(now.allowed && now.grant?.key?.storeID == token)

            let second = try #require(
                try await stack.control(
                    "google/change-product", ["purchaseToken": token, "productId": "premium_sub", "mode": "pending"]
                )["purchaseToken"] as? String)
            try await stack.control("google/complete-pending", ["purchaseToken": second])
            let moved = try await stack.eventually(account, "the completed upgrade") {
                $0.allowed && $0.grant?.key?.storeID == second
            }
            #expect(moved.grant?.productID == "premium_sub")
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// A purchase of `product` by `account`, then a deferred change to `newProduct` whose token
    /// the app presents at once, as Play Billing hands it over: the old token, its paid end, the
    /// new token and what verifying it answered.
    static func deferredChange(_ stack: StoreSimStack, _ account: String, from product: String, to newProduct: String)
        async throws -> (token: String, paidEnd: Int64, next: String, verified: VerifyPurchaseResponse)
    {
        let (token, _) = try await stack.buyOnPlay(account: account, product: product)
        _ = try await stack.eventually(account, "the purchase") { $0.allowed }
        let orders = try #require(
            try await stack.control("google/orders", ["purchaseToken": token])["orders"] as? [[String: Any]])
        let paidEnd = try #require((orders.first?["end"] as? NSNumber)?.int64Value)
        let next = try #require(
            try await stack.control(
                "google/change-product", ["purchaseToken": token, "productId": newProduct, "mode": "deferred"]
            )["purchaseToken"] as? String)
        let verified = try await Self.verify(stack, account, product: newProduct, token: next)
        return (token, paidEnd, next, verified)
    }

    @Test("a deferred downgrade: the new token at the change, the old plan to its period's end, the new one from there")
    func deferredChange() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, paidEnd, next, _) = try await Self.deferredChange(
                stack, account, from: "premium_sub", to: "pro_sub")
            try await stack.control("clock/advance", ["by": "+10d"])
            try await stack.settle()
            let meanwhile = try await stack.check(account, at: try await stack.simNow())
            #expect(meanwhile.allowed && meanwhile.grant?.key?.storeID == token)
            #expect(meanwhile.grant?.productID == "premium_sub")
            try await stack.control("clock/advance", ["by": "+22d"])
            let after = try await stack.eventually(account, "the new plan") {
                $0.allowed && $0.grant?.key?.storeID == next
            }
            #expect(after.grant?.productID == "pro_sub")
            // The old plan ran to its paid end; the new one starts there.
            let old = try await Self.recorded(
                stack, SubscriptionKey(store: .google, environment: .production, storeID: token))
            let new = try await Self.recorded(
                stack, SubscriptionKey(store: .google, environment: .production, storeID: next))
            #expect(old.subscription?.periods.last?.endMilliseconds == paidEnd)
            #expect(new.subscription?.periods.first?.startMilliseconds == paidEnd)
            let before = try await stack.check(account, at: paidEnd - Self.day)
            #expect(before.allowed && before.grant?.key?.storeID == token)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "a deferred upgrade to a plan with more capabilities gives them only from the old period's end, when it is paid"
    )
    func deferredUpgrade() async throws {
        let stack = try await StoreSimStack(
            policy: EntitlementStack.policy + "\ncapability premium\n  google premium_sub\n")
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, paidEnd, next, verified) = try await Self.deferredChange(
                stack, account, from: "pro_sub", to: "premium_sub")
            #expect(verified.subscription?.productID == "pro_sub")
            #expect(verified.subscription?.autoRenewProductID == "premium_sub")
            try await stack.control("clock/advance", ["by": "+10d"])
            try await stack.settle()
            var now = try await stack.simNow()
            let premium = try await Self.check(stack, account, "premium", at: now)
            #expect(!premium.allowed && premium.reason == .noGrant)
            let pro = try await Self.check(stack, account, "pro", at: now)
            #expect(pro.allowed && pro.grant?.key?.storeID == token && pro.grant?.productID == "pro_sub")
            try await stack.control("clock/advance", ["by": "+22d"])
            try await stack.settle()
            now = try await stack.simNow()
            let upgraded = try await Self.check(stack, account, "premium", at: now)
            #expect(upgraded.allowed && upgraded.grant?.key?.storeID == next)
            #expect(upgraded.grant?.productID == "premium_sub")
            // Asked afterwards about the deferral, the answer is the same.
            let looking = try await Self.check(stack, account, "premium", at: paidEnd - Self.day)
            #expect(!looking.allowed)
            let from = try await Self.check(stack, account, "premium", at: paidEnd)
            #expect(from.allowed && from.grant?.key?.storeID == next)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// Waits (at most 60 s) until the simulator's injected API faults are all taken: the slow
    /// call has arrived and is being held.
    static func faultTaken(_ stack: StoreSimStack) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let remaining = try await stack.control("google/api-faults")["remaining"] as? Int
            if remaining == 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the slow API call never arrived")
    }

    @Test("an acknowledgement answered late does not bring back access revoked while it was on its way")
    func lateAcknowledgement() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let bought = try await stack.control(
                "google/buy", ["productId": "pro_sub", "obfuscatedAccountId": account])
            let token = try #require(bought["purchaseToken"] as? String)
            try await stack.settle()
            try await stack.control("google/api-faults", ["count": 1, "delayMs": 8000, "path": ":acknowledge"])
            let verifying = Task {
                try await Self.verify(stack, account, product: "pro_sub", token: token)
            }
            try await Self.faultTaken(stack)
            // Play revokes the purchase while the acknowledgement is on its way.
            try await stack.control("google/refund", ["purchaseToken": token])
            let revoked = try await stack.eventually(account, "the revocation") { $0.reason == .revoked }
            #expect(!revoked.allowed)
            _ = try await verifying.value
            try await stack.settle()
            let after = try await stack.check(account, at: try await stack.simNow())
            #expect(!after.allowed && after.reason == .revoked)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a slow read that saw the purchase active does not overwrite a later one that saw it on hold")
    func slowRead() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("google/fail-payment", ["purchaseToken": token])
            // The next read is answered 8 s late, with the purchase as it was when asked.
            try await stack.control("google/api-faults", ["count": 1, "delayMs": 8000, "path": "subscriptionsv2"])
            let refreshing = Task { () throws -> RefreshSubscriptionResponse in
                try await stack.verifierClient.call(
                    VerifierRPC.refreshSubscription.name,
                    RefreshSubscriptionRequest(
                        key: SubscriptionKey(store: .google, environment: .production, storeID: token)))
            }
            try await Self.faultTaken(stack)
            // Meanwhile the renewal fails, grace runs out and Play puts the purchase on hold.
            try await stack.control("clock/advance", ["by": "+39d"])
            let held = try await stack.eventually(account, "the hold") { $0.grant?.state == .accountHold }
            #expect(!held.allowed && held.reason == .stateDenies)
            _ = try await refreshing.value
            try await stack.settle()
            let after = try await stack.check(account, at: try await stack.simNow())
            #expect(after.grant?.state == .accountHold && after.reason == .stateDenies)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("after an outage of 40 days the voided purchases pull starts where Play still lists, and its cursor moves on")
    func voidedWindowAfterOutage() async throws {
        // The store's clock is the verifier's: Play refuses a startTime older than 30 days.
        let stack = try await StoreSimStack(start: nil, verifier: ["GOOGLE_RECONCILE_INTERVAL": "1s"])
        do {
            let name = "google-voided-com.example.app"
            let outage = Int64(Date().timeIntervalSince1970 * 1000) - 40 * Self.day
            let _: Cursor = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/AdvanceCursor", AdvanceCursorRequest(name: name, value: outage))
            let deadline = ContinuousClock.now + .seconds(60)
            var cursor = outage
            while cursor == outage, ContinuousClock.now < deadline {
                let read: Cursor = try await stack.entitlementStack.ledgerClient.call(
                    "\(EntitlementStack.ledgerService)/GetCursor", GetCursorRequest(name: name))
                cursor = read.value
                if cursor == outage { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(cursor > outage + 39 * Self.day, "the voided purchases cursor stuck at \(cursor)")
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a notification of a kind Play adds later is acknowledged (2xx) and recorded, not delivered again")
    func newNotificationKind() async throws {
        let stack = try await StoreSimStack()
        do {
            // `control` itself checks that every push was answered 2xx.
            let answer = try await stack.control("google/notify-new-kind", ["kind": "futureNotification"])
            let statuses = (answer["notifications"] as? [[String: Any]] ?? []).compactMap { $0["status"] as? Int }
            #expect(statuses == [204])
            try await stack.settle()
            let processed: ListInboxResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .processed, store: .google))
            #expect(processed.entries.map(\.notificationType) == ["UNKNOWN"])
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("voiding last month's order revokes that order's period only: today's access stays")
    func voidOfPastRenewal() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("clock/advance", ["by": "+35d"])
            try await stack.settle()
            let orders = try #require(
                try await stack.control("google/orders", ["purchaseToken": token])["orders"] as? [[String: Any]])
            #expect(orders.count == 2)
            let first = try #require(orders.first?["orderId"] as? String)
            let firstStart = try #require((orders.first?["start"] as? NSNumber)?.int64Value)
            try await stack.control("google/void", ["orderId": first, "revoke": true])
            try await stack.settle()
            let today = try await stack.check(account, at: try await stack.simNow())
            #expect(today.allowed && today.grant?.key?.storeID == token)
            // The voided order's period carries the revocation (from the void, after its end);
            // the renewal's does not.
            let recorded = try await Self.recorded(
                stack, SubscriptionKey(store: .google, environment: .production, storeID: token))
            let periods = try #require(recorded.subscription?.periods)
            #expect(periods.map(\.startMilliseconds) == [firstStart, firstStart + 31 * Self.day])
            #expect(periods.map { $0.revokedTimeMilliseconds != nil } == [true, false])
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("quantity-based partial refunds keep a one-time unlock while units are left; the last unit's revokes it")
    func partialRefund() async throws {
        let stack = try await StoreSimStack(
            verifier: ["GOOGLE_ONE_TIME_PRODUCTS": "lifetime_unlock,coins_100"],
            policy: EntitlementStack.policy + "\ncapability lifetime\n  google lifetime_unlock\n")
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let bought = try await stack.control(
                "google/buy-one-time", ["productId": "lifetime_unlock", "quantity": 3, "obfuscatedAccountId": account])
            let token = try #require(bought["purchaseToken"] as? String)
            let order = try #require(bought["orderId"] as? String)
            _ = try await Self.verify(stack, account, product: "lifetime_unlock", token: token)
            try await stack.settle()
            #expect(try await Self.check(stack, account, "lifetime", at: try await stack.simNow()).allowed)
            for _ in 0..<2 {
                try await stack.control("google/void", ["orderId": order, "refundType": 2, "quantity": 1])
                try await stack.settle()
                #expect(try await Self.check(stack, account, "lifetime", at: try await stack.simNow()).allowed)
            }
            try await stack.control("google/void", ["orderId": order, "refundType": 2, "quantity": 1])
            try await stack.settle()
            let after = try await Self.check(stack, account, "lifetime", at: try await stack.simNow())
            #expect(!after.allowed && after.reason == .revoked)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "REVOKED and then EXPIRED (both reading expired) end revoked, also delivered the other way round",
        arguments: [false, true])
    func revokedThenExpired(reordered: Bool) async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("clock/advance", ["by": "+2d"])
            // Play sends REVOKED, EXPIRED and the void. The void is held back, so that only the
            // two subscription notifications decide: as sent, or the other way round.
            try await stack.control(
                "google/faults", reordered ? ["reorder": true, "drop": 1] : ["dropLast": 1])
            let sent = try await stack.control("google/refund", ["purchaseToken": token], delivered: false)
            let statuses = (sent["notifications"] as? [[String: Any]] ?? []).map { $0["status"] as? Int }
            #expect(statuses == (reordered ? [nil, 204, 204] : [204, 204, nil]))
            try await stack.settle()
            let now = try await stack.check(account, at: try await stack.simNow())
            #expect(!now.allowed && now.reason == .revoked && now.grant?.state == .revoked)
            let state = try await Self.recorded(
                stack, SubscriptionKey(store: .google, environment: .production, storeID: token))
            #expect(state.subscription?.revokedTimeMilliseconds != nil)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "a base plan with an add-on grants both products' capabilities, each named in its grant with its own renewal"
    )
    func addOns() async throws {
        let stack = try await StoreSimStack(
            simulator: [
                "STORESIM_GOOGLE_PRODUCTS": "pro_sub:monthly:1m,premium_sub:monthly:1m,storage_addon:monthly:1m"
            ],
            policy: EntitlementStack.policy + "\ncapability storage\n  google storage_addon\n")
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let bought = try await stack.control(
                "google/buy", ["productId": "pro_sub", "addOns": ["storage_addon"], "obfuscatedAccountId": account])
            let token = try #require(bought["purchaseToken"] as? String)
            _ = try await Self.verify(stack, account, product: "pro_sub", token: token)
            try await stack.settle()
            let now = try await stack.simNow()
            let pro = try await Self.check(stack, account, "pro", at: now)
            let storage = try await Self.check(stack, account, "storage", at: now)
            #expect(pro.allowed && pro.grant?.productID == "pro_sub")
            #expect(storage.allowed && storage.grant?.productID == "storage_addon")

            // The add-on's renewal is turned off (Play sends nothing for that): read again, each
            // grant shows its own line item's renewal.
            try await stack.control("google/cancel-add-on", ["purchaseToken": token, "productId": "storage_addon"])
            let _: RefreshSubscriptionResponse = try await stack.verifierClient.call(
                VerifierRPC.refreshSubscription.name,
                RefreshSubscriptionRequest(
                    key: SubscriptionKey(store: .google, environment: .production, storeID: token)))
            try await stack.settle()
            let listed: ListEntitlementsResponse = try await stack.entitlementClient.call(
                EntitlementRPC.listEntitlements.name,
                ListEntitlementsRequest(accountID: account, atMilliseconds: try await stack.simNow()))
            let grants = Dictionary(
                uniqueKeysWithValues: listed.entitlements.compactMap { entry in
                    entry.grants.first.map { (entry.capability, $0) }
                })
            #expect(grants["pro"]?.productID == "pro_sub" && grants["pro"]?.renewal?.autoRenew == true)
            #expect(grants["storage"]?.productID == "storage_addon" && grants["storage"]?.renewal?.autoRenew == false)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a prepaid plan: no renewal, access to its expiry, a top-up extends it")
    func prepaidPlan() async throws {
        let stack = try await StoreSimStack(
            simulator: ["STORESIM_GOOGLE_PRODUCTS": "pro_sub:prepaid30:1m:prepaid,premium_sub:monthly:1m"])
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, verified) = try await stack.buyOnPlay(account: account)
            #expect(verified.subscription?.productKind == .nonRenewing && verified.subscription?.autoRenew == false)
            let first = try await stack.eventually(account, "the prepaid plan") { $0.allowed }
            let paidEnd = try #require(first.untilMilliseconds)
            try await stack.control("google/top-up", ["purchaseToken": token])
            let extended = try await stack.eventually(account, "the top-up") {
                $0.allowed && ($0.untilMilliseconds ?? 0) > paidEnd
            }
            let newEnd = try #require(extended.untilMilliseconds)
            #expect(newEnd - paidEnd >= 28 * Self.day)
            let after = try await stack.check(account, at: newEnd + 1)
            #expect(!after.allowed && after.reason == .expired)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a one-time product notification for a product the verifier was not told of is recorded, not retried")
    func unconfiguredOneTime() async throws {
        let stack = try await StoreSimStack()
        do {
            let bought = try await stack.control("google/buy-one-time", ["productId": "lifetime_unlock"])
            let token = try #require(bought["purchaseToken"] as? String)
            try await stack.settle()
            let state = try await Self.recorded(
                stack, SubscriptionKey(store: .google, environment: .production, storeID: token))
            #expect(state.subscription?.productKind == .nonConsumable)
            #expect(state.subscription?.productID == "lifetime_unlock")
            let failed: ListInboxResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .failed, store: .google))
            #expect(failed.entries.isEmpty)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a test purchase is kept in the sandbox environment, with Google's answer kept beside its period")
    func testPurchase() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let bought = try await stack.control(
                "google/buy", ["productId": "pro_sub", "obfuscatedAccountId": account, "test": true])
            let token = try #require(bought["purchaseToken"] as? String)
            let verified = try await Self.verify(stack, account, product: "pro_sub", token: token)
            #expect(verified.subscription?.key.environment == .sandbox)
            let state = try await Self.recorded(
                stack, SubscriptionKey(store: .google, environment: .sandbox, storeID: token))
            #expect(state.periods.count == 1)
            #expect(state.periods.first?.raw?.contains("\"testPurchase\"") == true)
            _ = try await stack.eventually(account, "the test purchase") { $0.allowed }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
