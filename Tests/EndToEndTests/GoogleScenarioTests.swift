import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// Google Play's side of the lifecycle edges and failures (`StoreSimScenarioTests` has the App
/// Store's), and a store outage with slow and failing answers from both stores at once.
@Suite("End to end: Google Play edges and failures, and both stores slow")
struct GoogleScenarioTests {
    @Test("a downgrade at period end: premium today, then the replacement token on the cheaper plan at renewal")
    func downgradeAtRenewal() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account, product: "premium_sub")
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            let changed = try await stack.control(
                "google/change-product", ["purchaseToken": token, "productId": "pro_sub", "immediately": false])
            #expect(changed["purchaseToken"] == nil)
            try await stack.control("clock/advance", ["by": "+10d"])
            try await stack.settle()
            let today = try await stack.check(account, at: try await stack.simNow())
            #expect(today.allowed && today.grant?.productID == "premium_sub")
            try await stack.control("clock/advance", ["by": "+22d"])
            let renewed = try await stack.eventually(account, "the plan change at renewal") {
                $0.allowed && $0.grant?.productID == "pro_sub"
            }
            let next = try #require(renewed.grant?.key)
            #expect(next.storeID != token)
            let trail: GetHistoryResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/GetHistory", GetHistoryRequest(key: next, pageSize: 100))
            #expect(trail.events.contains { $0.kind == .purchased })
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a push delivered five times is recorded once; pushes out of order end in the right state")
    func duplicatesAndReordering() async throws {
        // The verifier judges a cancelled Play subscription past its expiry (by its own clock) as
        // expired: the store's clock starts now so that the cancellation falls inside the period.
        let stack = try await StoreSimStack(start: nil)
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("google/faults", ["duplicate": 1, "copies": 5])
            let cancelled = try await stack.control("google/cancel", ["purchaseToken": token])
            #expect((cancelled["notifications"] as? [[String: Any]])?.count == 5)
            _ = try await stack.eventually(account, "the cancellation") { $0.grant?.state == .cancelled }
            try await stack.control("google/restart", ["purchaseToken": token])
            _ = try await stack.eventually(account, "the restart") { $0.grant?.state == .active }
            let before = try await stack.check(account, at: try await stack.simNow()).untilMilliseconds ?? 0
            try await stack.control("google/faults", ["reorder": true])
            try await stack.control("clock/advance", ["by": "+62d"])
            // Two monthly renewals: the paid end moves by at least 58 days.
            _ = try await stack.eventually(account, "both renewals") {
                $0.allowed && ($0.untilMilliseconds ?? 0) >= before + 58 * 86_400_000
            }
            let history = try await stack.eventuallyInHistory(of: account, "both renewals") {
                $0.filter { $0 == "SUBSCRIPTION_RENEWED" }.count == 2
            }
            #expect(history.filter { $0 == "SUBSCRIPTION_CANCELED" }.count == 1)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a refund whose pushes are lost is found by reconciliation in the voided purchases")
    func lostRefundReconciled() async throws {
        // Reconciliation asks for voided purchases by the wall clock: the store's clock starts now.
        let stack = try await StoreSimStack(start: nil, verifier: ["GOOGLE_RECONCILE_INTERVAL": "1s"])
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("google/faults", ["drop": 2])
            try await stack.control("google/refund", ["purchaseToken": token], delivered: false)
            let revoked = try await stack.eventually(account, "the reconciled refund") { !$0.allowed }
            #expect(revoked.reason == .revoked)
            _ = try await stack.eventuallyKinds(of: account, "the refund") { $0.contains(.refunded) }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("both stores' APIs slow past the timeout and then failing with 5xx for a while: renewals still arrive")
    func outageWithTimeouts() async throws {
        let stack = try await StoreSimStack(verifier: ["APPLE_API_TIMEOUT": "1s", "GOOGLE_API_TIMEOUT": "1s"])
        do {
            let alice = UUID().uuidString.lowercased()
            let bob = "user-\(UUID().uuidString.prefix(8))"
            _ = try await stack.buyOnAppStore(account: alice)
            _ = try await stack.buyOnPlay(account: bob)
            for account in [alice, bob] { _ = try await stack.eventually(account, "the purchase") { $0.allowed } }
            try await stack.control("apple/api-faults", ["count": 2, "delayMs": 2500])
            try await stack.control("google/api-faults", ["count": 2, "delayMs": 2500])
            try await stack.control("clock/advance", ["by": "+31d"])
            try await stack.control("google/api-faults", ["count": 2, "status": 503])
            try await stack.control("apple/api-faults", ["count": 2, "status": 500])
            try await stack.control("clock/advance", ["by": "+29d"])
            for account in [alice, bob] {
                _ = try await stack.eventually(account, "both renewals") {
                    $0.allowed && $0.untilMilliseconds == 1_775_001_600_000  // 2026-04-01
                }
            }
            // Play's 5xx were served, not skipped: its API answered at least one call with them.
            #expect((try await stack.control("google/api-faults")["remaining"] as? Int ?? 2) < 2)
            // An App Store DID_RENEW with its renewal info and status is the whole state: no call
            // was made, so none of the App Store's 500s was asked for.
            #expect(try await stack.control("apple/api-faults")["remaining"] as? Int == 2)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
