import Config
import Crypto
import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// The App Store cases where one current state per subscription answered access wrongly, through
/// the whole system and the store simulator (which charges renewals up to a day early, refunds
/// any transaction of a chain and sells non-renewing subscriptions, as Apple does).
@Suite("End to end: App Store access from verified periods")
struct ApplePeriodScenarioTests {
    static let day: Int64 = 86_400_000
    /// 2026-02-01T00:00:00Z: the end of the first month of a purchase at the simulator's start.
    static let february: Int64 = 1_769_904_000_000

    /// The ids of every transaction of the chain, oldest first.
    func transactions(_ stack: StoreSimStack, _ original: String) async throws -> [String] {
        let answer = try await stack.control("apple/transactions", ["transactionId": original])
        return try #require(answer["transactionIds"] as? [String])
    }

    @Test("a renewal charged before the period ends keeps access through the old period into the new one")
    func earlyRenewal() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            // A second before the first month ends: the renewal is charged by then (up to a day early)
            // and its period starts at the month's end.
            try await stack.control("clock/advance", ["by": "+30d"])
            try await stack.control("clock/advance", ["by": "+86399s"])
            let renewed = try await stack.eventually(account, "the early renewal") {
                $0.allowed && ($0.untilMilliseconds ?? 0) > Self.february
            }
            let now = try await stack.simNow()
            #expect(now < Self.february)
            #expect(renewed.untilMilliseconds == 1_772_323_200_000)  // 2026-03-01
            let ids = try await transactions(stack, original)
            #expect(ids.count == 2)
            // What the decision rests on: each period with the signed transaction it came from.
            let stored: GetSubscriptionResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/GetSubscription",
                GetSubscriptionRequest(key: SubscriptionKey(store: .apple, environment: .sandbox, storeID: original)))
            #expect(stored.periods.count == 2)
            #expect(stored.periods[1].startMilliseconds == Self.february)
            let signed = stored.periods.compactMap { period in try? CompactJWS(period.raw ?? "") }
            #expect(signed.count == 2)
            #expect(stored.subscription?.periods.count == 1)
            let history = try await stack.history(of: account)
            let renewal = try #require(history.last(where: { $0.storeType == "DID_RENEW" }))
            #expect(renewal.rawTransaction?.isEmpty == false && renewal.rawRenewalInfo?.isEmpty == false)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("an upgrade after the renewal was charged early: the new product runs its own month past the old end")
    func upgradeAfterEarlyRenewal() async throws {
        let policy = EntitlementStack.policy + "\ncapability premium\n  apple com.example.premium.monthly\n"
        let stack = try await StoreSimStack(policy: policy)
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            // Minutes before the first month ends its renewal has been charged (up to a day
            // early); then the customer upgrades, which Apple applies at once.
            try await stack.control("clock/advance", ["by": "+30d"])
            try await stack.control("clock/advance", ["by": "+86000s"])
            _ = try await stack.eventually(account, "the early renewal") { ($0.untilMilliseconds ?? 0) > Self.february }
            try await stack.control(
                "apple/change-product", ["transactionId": original, "productId": "com.example.premium.monthly"])
            let upgraded = try await stack.eventually(account, "the upgrade") {
                $0.grant?.productID == "com.example.premium.monthly"
            }
            // The upgrade's own month, which ends before the replaced renewal would have.
            let until = try #require(upgraded.untilMilliseconds)
            #expect(until > Self.february + 27 * Self.day && until < 1_772_323_200_000)
            #expect(try await transactions(stack, original).count == 3)
            try await stack.control("clock/advance", ["by": "+2d"])
            let later = try await stack.simNow()
            #expect(later > Self.february)
            let premium = try await stack.checks(
                account, capability: "premium", at: [Self.february - 1, Self.february, later])
            for answer in premium {
                #expect(answer.allowed && answer.untilMilliseconds == until)
                #expect(answer.grant?.productID == "com.example.premium.monthly")
            }
            let pro = try await stack.check(account, at: later)
            #expect(pro.allowed && pro.untilMilliseconds == until)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// Apple does not document which transaction the revocation date goes on while the renewal
    /// waits: the renewal (not started yet) or the one in force; each way, access ends at once.
    @Test(
        "family sharing revoked while the renewal charged early waits: access ends at the REVOKE",
        arguments: ["newest", "in-force"])
    func familyRevokeAfterEarlyRenewal(marking: String) async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let original = try await stack.buySharedOnAppStore(account: account)
            try await stack.control("clock/advance", ["by": "+30d"])
            try await stack.control("clock/advance", ["by": "+86000s"])
            _ = try await stack.eventually(account, "the early renewal") { ($0.untilMilliseconds ?? 0) > Self.february }
            let asked = try await stack.simNow()
            try await stack.revokeFamilySharing(original, of: account, marking: marking)
            // Access ran until the REVOKE (signed at the action, a second after the last one at
            // most), which came before the first month's end.
            let before = try await stack.check(account, at: asked - 1)
            let revokedAt = try #require(before.untilMilliseconds)
            #expect(before.allowed && revokedAt >= asked && revokedAt < Self.february)
            #expect(try await stack.check(account, at: revokedAt).reason == .revoked)
            #expect(try await stack.check(account, at: Self.february + Self.day).reason == .revoked)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("with the App Store API away, a refund of an old period revokes that period only; today's access stays")
    func refundOfOldPeriodDuringOutage() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            for renewal in 1...2 {
                try await stack.control("clock/advance", ["by": "+31d"])
                _ = try await stack.eventually(account, "renewal \(renewal)") {
                    $0.allowed && ($0.untilMilliseconds ?? 0) > Self.february + Int64(renewal - 1) * 28 * Self.day
                }
            }
            let ids = try await transactions(stack, original)
            #expect(ids.count == 3)
            let before = try await stack.check(account, at: try await stack.simNow())
            try await stack.control("apple/api-faults", ["count": 50, "status": 500])
            try await stack.control("apple/refund", ["transactionId": ids[0]])
            _ = try await stack.eventuallyInHistory(of: account, "the refund") { $0.contains("REFUND") }
            let after = try await stack.check(account, at: try await stack.simNow())
            #expect(after.allowed && after.untilMilliseconds == before.untilMilliseconds)
            #expect(after.grant?.state == .active)
            try await stack.control("apple/consumption-request", ["transactionId": ids[1]])
            _ = try await stack.eventuallyInHistory(of: account, "the consumption request") {
                $0.contains("CONSUMPTION_REQUEST")
            }
            let still = try await stack.check(account, at: try await stack.simNow())
            #expect(still.allowed && still.untilMilliseconds == before.untilMilliseconds)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a renewal date extension moves the current period's end: the newer-signed version of the period stands")
    func renewalExtended() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            let bought = try await stack.eventually(account, "the purchase") { $0.allowed }
            #expect(bought.untilMilliseconds == Self.february)
            try await stack.control("clock/advance", ["by": "+3d"])
            try await stack.control("apple/extend-renewal", ["transactionId": original, "days": 10])
            let extended = try await stack.eventually(account, "the extension") {
                $0.untilMilliseconds == Self.february + 10 * Self.day
            }
            #expect(extended.allowed)
            let stored: GetSubscriptionResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/GetSubscription",
                GetSubscriptionRequest(key: SubscriptionKey(store: .apple, environment: .sandbox, storeID: original)))
            #expect(stored.periods.count == 1)
            #expect(stored.periods.first?.endMilliseconds == Self.february + 10 * Self.day)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("an at in the past is answered as paid then, though the subscription has expired since")
    func pastAt() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            try await stack.control("clock/advance", ["by": "+31d"])
            _ = try await stack.eventually(account, "the renewal") { ($0.untilMilliseconds ?? 0) > Self.february }
            try await stack.control("apple/cancel", ["transactionId": original])
            try await stack.control("clock/advance", ["by": "+40d"])
            _ = try await stack.eventually(account, "the expiry") { !$0.allowed && $0.grant?.state == .expired }
            let firstMonth = try await stack.check(account, at: Self.february - 10 * Self.day)
            #expect(firstMonth.allowed)
            #expect(firstMonth.untilMilliseconds == 1_772_323_200_000)
            let secondMonth = try await stack.check(account, at: Self.february + 10 * Self.day)
            #expect(secondMonth.allowed)
            let beforePurchase = try await stack.check(account, at: 1_767_225_600_000 - 1)
            #expect(beforePurchase.reason == .noGrant)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("two facts of one transaction signed at one millisecond end in the same state in either arrival order")
    func equalStoreTimes() async throws {
        // The same purchase, cancellation and resubscription in two fresh systems (the
        // simulator's ids and clock start the same), the API away so that each notification's
        // own signed data is all there is to order them by; the cancellation arrives first in
        // one and last in the other.
        var finals: [Subscription] = []
        for cancellationLast in [false, true] {
            let stack = try await StoreSimStack()
            do {
                let account = "a7c1d3e5-0000-4000-8000-000000000001"
                let (original, _) = try await stack.buyOnAppStore(account: account)
                try await stack.control("apple/api-faults", ["count": 100, "status": 500])
                if cancellationLast { try await stack.control("apple/faults", ["drop": 1]) }
                try await stack.control("apple/cancel", ["transactionId": original], delivered: !cancellationLast)
                try await stack.control("apple/resubscribe", ["transactionId": original], apart: false)
                if cancellationLast { try await stack.control("apple/redeliver") }
                _ = try await stack.eventuallyInHistory(of: account, "both renewal status changes") {
                    $0.filter { $0 == "DID_CHANGE_RENEWAL_STATUS" }.count == 2
                }
                let stored: GetSubscriptionResponse = try await stack.entitlementStack.ledgerClient.call(
                    "\(EntitlementStack.ledgerService)/GetSubscription",
                    GetSubscriptionRequest(
                        key: SubscriptionKey(store: .apple, environment: .sandbox, storeID: original)))
                finals.append(try #require(stored.subscription))
            } catch {
                await stack.stop()
                throw error
            }
            await stack.stop()
        }
        #expect(finals[0].key == finals[1].key)
        #expect(finals[0].storeTimeMilliseconds == finals[1].storeTimeMilliseconds)
        #expect(finals[0].state == finals[1].state)
        #expect(finals[0].autoRenew == finals[1].autoRenew)
    }

    @Test("a notification processed again after the state moved on (a retry whose commit landed) ends processed")
    func reprocessedNotification() async throws {
        let stack = try await StoreSimStack(start: nil, verifier: ["APPLE_RECONCILE_INTERVAL": "1s"])
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            let ledger = stack.entitlementStack.ledgerClient
            let inbox: ListInboxResponse = try await ledger.call(
                "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .processed, store: .apple))
            let subscribed = try #require(inbox.entries.first(where: { $0.notificationType == "SUBSCRIBED" }))
                .notificationID
            try await stack.control("apple/cancel", ["transactionId": original])
            _ = try await stack.eventually(account, "the cancellation") { $0.grant?.state == .cancelled }
            // The verifier gave up waiting for its first write, which had landed: the entry is
            // failed, and reconciliation processes it again against today's state.
            let _: MarkInboxResponse = try await ledger.call(
                "\(EntitlementStack.ledgerService)/MarkInbox",
                MarkInboxRequest(store: .apple, notificationID: subscribed, status: .failed, error: "timed out"))
            let deadline = ContinuousClock.now + .seconds(60)
            var entry: InboxEntry?
            while ContinuousClock.now < deadline {
                let listed: ListInboxResponse = try await ledger.call(
                    "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .processed, store: .apple))
                entry = listed.entries.first { $0.notificationID == subscribed && $0.attempts > 1 }
                if entry != nil { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(entry?.status == .processed, "the notification never ended processed again")
            let failed: ListInboxResponse = try await ledger.call(
                "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .failed, store: .apple))
            #expect(failed.entries.isEmpty)
            let now = try await stack.check(account, at: try await stack.simNow())
            #expect(now.allowed && now.grant?.state == .cancelled)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a non-renewing subscription lasts the policy's duration, not forever")
    func nonRenewing() async throws {
        let policy = EntitlementStack.policy + "\n  apple com.example.pass.30d duration 30d\n"
        let stack = try await StoreSimStack(policy: policy)
        do {
            let account = UUID().uuidString.lowercased()
            let bought = try await stack.control(
                "apple/buy", ["productId": "com.example.pass.30d", "appAccountToken": account])
            let id = try #require(bought["transactionId"] as? String)
            let verified: VerifyPurchaseResponse = try await stack.verifierClient.call(
                VerifierRPC.verifyApplePurchase.name,
                VerifyApplePurchaseRequest(
                    accountID: account, transactionID: id, environment: .sandbox, idempotencyKey: "pass-\(id)"))
            #expect(verified.subscription?.productKind == .nonRenewing)
            let start = try #require(verified.subscription?.purchaseTimeMilliseconds)
            let answer = try await stack.eventually(account, "the pass") { $0.allowed }
            #expect(answer.untilMilliseconds == start + 30 * Self.day)
            let ended = try await stack.check(account, at: start + 30 * Self.day)
            #expect(ended.reason == .expired)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
