import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// Google Play scenarios through the whole system and the store simulator (`StoreSimStack`):
/// Pub/Sub pushes authenticated by the verifier against the simulator's JWKS, the Play
/// Developer API behind the service account's tokens.
@Suite("End to end: Google Play through the store simulator")
struct GoogleStoreSimulatorTests {
    /// The Google subscription key of a purchase token (the simulator's purchases are not test
    /// purchases: production).
    static func key(_ token: String) -> SubscriptionKey {
        SubscriptionKey(store: .google, environment: .production, storeID: token)
    }

    @Test("purchase, acknowledgement by the verifier, renewals, grace then account hold then recovery")
    func lifecycle() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, verified) = try await stack.buyOnPlay(account: account)
            #expect(verified.subscription?.key == Self.key(token) && verified.subscription?.state == .active)
            var answer = try await stack.eventually(account, "the purchase") { $0.allowed }
            #expect(answer.grant?.productID == "pro_sub" && answer.grant?.basePlanID == "monthly")
            // The verifier acknowledged it: three days later it is not refunded.
            try await stack.control("clock/advance", ["by": "+4d"])
            try await stack.settle()
            #expect(try await stack.check(account, at: try await stack.simNow()).allowed)

            var until = try #require(answer.untilMilliseconds)
            for renewal in 1...3 {
                try await stack.control("clock/advance", ["by": "+31d"])
                let previous = until
                answer = try await stack.eventually(account, "renewal \(renewal)") {
                    $0.allowed && ($0.untilMilliseconds ?? 0) > previous
                }
                until = try #require(answer.untilMilliseconds)
            }

            // April 8 now, paid to May 1: the renewal fails then, grace runs to May 8, then hold.
            try await stack.control("google/fail-payment", ["purchaseToken": token])
            try await stack.control("clock/advance", ["by": "+24d"])
            _ = try await stack.eventually(account, "the grace period") {
                $0.allowed && $0.grant?.state == .gracePeriod
            }
            try await stack.control("clock/advance", ["by": "+8d"])
            let hold = try await stack.eventually(account, "the account hold") {
                !$0.allowed && $0.grant?.state == .accountHold
            }
            #expect(hold.reason == .stateDenies)
            try await stack.control("google/recover", ["purchaseToken": token])
            _ = try await stack.eventually(account, "the recovery") { $0.allowed && $0.grant?.state == .active }
            _ = try await stack.eventuallyKinds(of: account, "renewals, grace, hold and recovery") { kinds in
                kinds.filter { $0 == .renewed }.count == 3
                    && [.gracePeriodStarted, .accountHold, .billingRecovered].allSatisfy(kinds.contains)
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "pause and resume; an upgrade through linkedPurchaseToken continues access on the new token; a refund revokes")
    func pauseUpgradeAndRefund() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("google/pause", ["purchaseToken": token, "for": "+30d"])
            try await stack.control("clock/advance", ["by": "+32d"])
            let paused = try await stack.eventually(account, "the pause") { !$0.allowed && $0.grant?.state == .paused }
            #expect(paused.reason == .stateDenies)
            try await stack.control("google/resume", ["purchaseToken": token])
            _ = try await stack.eventually(account, "the resume") { $0.allowed }

            let changed = try await stack.control(
                "google/change-product", ["purchaseToken": token, "productId": "premium_sub", "immediately": true])
            let next = try #require(changed["purchaseToken"] as? String)
            let upgraded = try await stack.eventually(account, "the upgrade") {
                $0.allowed && $0.grant?.key?.storeID == next
            }
            #expect(upgraded.grant?.productID == "premium_sub")

            try await stack.control("google/refund", ["purchaseToken": next])
            let refunded = try await stack.eventually(account, "the refund") { !$0.allowed }
            #expect(refunded.reason == .revoked)
            _ = try await stack.eventuallyKinds(of: account, "the pause, the upgrade and the refund") { kinds in
                [.pauseScheduled, .paused, .purchased, .revoked].allSatisfy(kinds.contains)
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
