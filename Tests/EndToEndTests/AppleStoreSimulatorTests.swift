import Config
import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// App Store scenarios through the whole system and the store simulator (`StoreSimStack`).
@Suite("End to end: App Store through the store simulator")
struct AppleStoreSimulatorTests {
    @Test(
        "purchase, twelve renewals, cancel and expiry at period end: CheckAccess follows each step, and the ledger has the history"
    )
    func lifecycle() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, verified) = try await stack.buyOnAppStore(account: account)
            #expect(verified.subscription?.key.storeID == original && verified.subscription?.state == .active)
            var answer = try await stack.eventually(account, "the purchase") { $0.allowed }
            #expect(answer.grant?.key?.storeID == original && answer.grant?.productID == "com.example.pro.monthly")
            var until = try #require(answer.untilMilliseconds)

            for renewal in 1...12 {
                try await stack.control("clock/advance", ["by": "+31d"])
                let previous = until
                answer = try await stack.eventually(account, "renewal \(renewal)") {
                    $0.allowed && ($0.untilMilliseconds ?? 0) > previous
                }
                until = try #require(answer.untilMilliseconds)
            }

            try await stack.control("apple/cancel", ["transactionId": original])
            let cancelled = try await stack.eventually(account, "the cancellation") {
                $0.allowed && $0.grant?.state == .cancelled
            }
            #expect(cancelled.untilMilliseconds == until)
            // Access ends at the paid end by itself; the EXPIRED notification then marks the state.
            try await stack.control("clock/advance", ["by": "+32d"])
            #expect(try await stack.check(account, at: try await stack.simNow()).allowed == false)
            let expired = try await stack.eventually(account, "the expiry") {
                !$0.allowed && $0.grant?.state == .expired
            }
            #expect(expired.reason == .expired)

            // Pages end at their byte bound (each event keeps its signed payload): follow them.
            var events: [LifecycleEvent] = []
            var token: String?
            repeat {
                let page: GetHistoryResponse = try await stack.entitlementStack.ledgerClient.call(
                    "\(EntitlementStack.ledgerService)/GetHistory",
                    GetHistoryRequest(
                        key: SubscriptionKey(store: .apple, environment: .sandbox, storeID: original), pageSize: 100,
                        pageToken: token))
                events += page.events
                token = page.nextPageToken
            } while token != nil
            let types = events.compactMap(\.storeType)
            #expect(types.filter { $0 == "DID_RENEW" }.count == 12)
            #expect(
                types.contains("SUBSCRIBED") && types.contains("DID_CHANGE_RENEWAL_STATUS") && types.contains("EXPIRED")
            )
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a refund ends access at once and its reversal restores it; a failed payment keeps access through grace")
    func refundAndGrace() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("clock/advance", ["by": "+3d"])
            try await stack.control("apple/refund", ["transactionId": original])
            let refunded = try await stack.eventually(account, "the refund") { !$0.allowed }
            #expect(refunded.reason == .revoked)
            try await stack.control("apple/reverse-refund", ["transactionId": original])
            _ = try await stack.eventually(account, "the reversal") { $0.allowed }

            try await stack.control("apple/fail-payment", ["transactionId": original])
            try await stack.control("clock/advance", ["by": "+29d"])
            let grace = try await stack.eventually(account, "the grace period") {
                $0.allowed && $0.grant?.state == .gracePeriod
            }
            #expect(grace.untilMilliseconds ?? 0 > (try await stack.simNow()))
            try await stack.control("apple/recover", ["transactionId": original])
            _ = try await stack.eventually(account, "the recovery") { $0.allowed && $0.grant?.state == .active }
            _ = try await stack.eventuallyInHistory(of: account, "the refund, its reversal and the recovery") {
                types in ["REFUND", "REFUND_REVERSED", "DID_FAIL_TO_RENEW", "DID_RENEW"].allSatisfy(types.contains)
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
