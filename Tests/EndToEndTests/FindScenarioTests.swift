import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// `Find` end to end against the store simulator: every id a customer may quote finds the
/// purchase the verifier recorded (an account id; an App Store original transaction id, a
/// renewal's transaction id and an order id from the receipt; a Google Play purchase token, its
/// first order id and a renewal's `..1`), and a value nothing matches is NOT_FOUND saying what
/// was tried.
@Suite("End to end: find by anything a customer quotes")
struct FindScenarioTests {
    static func find(_ stack: StoreSimStack, _ value: String) async throws -> FindResponse {
        try await stack.verifierClient.call(VerifierRPC.find.name, FindRequest(value: value, reason: "ticket 31"))
    }

    @Test("App Store: the account, the original transaction id, a renewal's transaction id and an order id")
    func appStore() async throws {
        try await StoreSimStack.with(inProcess: true) { stack in
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            try await stack.control("clock/advance", ["by": "+31d"])
            _ = try await stack.eventuallyInHistory(of: account, "the renewal") { $0.contains("DID_RENEW") }
            try await stack.settle()
            let chain = try await stack.control("apple/transactions", ["transactionId": original])
            let transactions = try #require(chain["transactions"] as? [[String: Any]])
            #expect(transactions.count == 2)
            let renewal = try #require(transactions.last?["transactionId"] as? String)
            let order = try #require(transactions.last?["orderId"] as? String)
            for (value, taken) in [
                (account, FindMatch.accountID), (original, .appleOriginalTransactionID),
                (renewal, .appleTransactionID), (order, .appleOrderID),
            ] {
                let found = try await Self.find(stack, value)
                #expect(found.takenAs == taken, "\(value)")
                #expect(found.accountIDs == [account], "\(value)")
                #expect(found.subscriptions.map(\.subscription?.key.storeID) == [original], "\(value)")
                // Every transaction's period, each under its own transaction id.
                let periods = found.subscriptions.first?.periods ?? []
                #expect(
                    periods.map(\.periodID) == transactions.compactMap { $0["transactionId"] as? String },
                    "\(value): \(periods.map(\.periodID))")
                #expect(found.events.contains { $0.storeType == "DID_RENEW" }, "\(value)")
                #expect(found.unrecordedOriginalTransactionIDs.isEmpty, "\(value)")
            }
        }
    }

    @Test("Google Play: the purchase token, the first order id and the second renewal's ..1")
    func googlePlay() async throws {
        try await StoreSimStack.with(inProcess: true) { stack in
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            try await stack.control("clock/advance", ["by": "+31d"])
            _ = try await stack.eventuallyInHistory(of: account, "the first renewal") {
                $0.filter { $0 == "SUBSCRIPTION_RENEWED" }.count == 1
            }
            try await stack.control("clock/advance", ["by": "+31d"])
            _ = try await stack.eventuallyInHistory(of: account, "the second renewal") {
                $0.filter { $0 == "SUBSCRIPTION_RENEWED" }.count == 2
            }
            try await stack.settle()
            let orders = try #require(
                try await stack.control("google/orders", ["purchaseToken": token])["orders"] as? [[String: Any]])
            let ids = orders.compactMap { $0["orderId"] as? String }
            #expect(ids.count == 3 && ids[2] == ids[0] + "..1")
            for (value, taken) in [
                (token, FindMatch.googlePurchaseToken), (ids[0], .googleOrderID), (ids[2], .googleOrderID),
            ] {
                let found = try await Self.find(stack, value)
                #expect(found.takenAs == taken, "\(value)")
                #expect(found.accountIDs == [account], "\(value)")
                #expect(found.subscriptions.map(\.subscription?.key.storeID) == [token], "\(value)")
                // Every order's period, each under its own order id.
                let periods = found.subscriptions.first?.periods ?? []
                #expect(periods.map(\.periodID) == ids.map { $0 + "/pro_sub" }, "\(value): \(periods.map(\.periodID))")
                // Each order starts where the one before it ends (Play names no start per order).
                #expect(
                    periods.dropFirst().map(\.startMilliseconds) == periods.dropLast().map { $0.endMilliseconds ?? 0 },
                    "\(value)")
                // The import-style events recorded before the link are among the events too.
                #expect(found.events.contains { $0.storeType == "API" || $0.kind == .purchased }, "\(value)")
                #expect(found.events.count <= 20 && !found.events.isEmpty, "\(value)")
            }
        }
    }

    @Test("a value nothing matches is NOT_FOUND naming what was tried, an App Store order id included")
    func unknownValue() async throws {
        try await StoreSimStack.with(inProcess: true) { stack in
            var refusal: RPCError?
            do {
                _ = try await Self.find(stack, "MK5TTTVWJH")
            } catch let error as RPCError {
                refusal = error
            }
            #expect(refusal?.code == .notFound)
            #expect(
                refusal?.message
                    == "nothing in the ledger matches \"MK5TTTVWJH\" as an account id, an App Store transaction or "
                    + "original transaction id, a Google Play purchase token or order id, an App Store order id "
                    + "(Look Up Order ID); check the value the customer quoted")
        }
    }
}
