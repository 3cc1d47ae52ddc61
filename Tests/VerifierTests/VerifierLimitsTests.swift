import Clients
import Foundation
import GooglePlay
import Model
import RPC
import Testing
import Wire

@testable import VerifierService

/// The request fields' bounds as the verifier holds them: those `proto/` states (the generated
/// `Limits`), whatever keys the verifier derives for the ledger from them.
@Suite("Verifier field limits", .serialized)
struct VerifierLimitsTests {
    @Test("a 128-byte idempotency key verifies and restores an App Store purchase; a 129-byte one is refused")
    func longestKey() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.set("2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
        let verifier = try verifierClient(apple: harness.adapter)
        let longest = String(repeating: "k", count: VerifyApplePurchaseRequest.Limits.idempotencyKey.maximum)
        #expect(longest.utf8.count == 128)
        let verified = try await verifier.verifyApplePurchase(
            VerifyApplePurchaseRequest(accountID: "user-1", transactionID: "2000000009", idempotencyKey: longest))
        #expect(verified.newlyLinked && verified.subscription?.accountID == "user-1")
        // The same key again is the same answer.
        let again = try await verifier.verifyApplePurchase(
            VerifyApplePurchaseRequest(accountID: "user-1", transactionID: "2000000009", idempotencyKey: longest))
        #expect(again.subscription?.key == verified.subscription?.key)
        let restored = try await verifier.restorePurchases(
            RestorePurchasesRequest(accountID: "user-1", appleTransactionIDs: ["2000000009"], idempotencyKey: longest))
        #expect(restored.subscriptions.map(\.key.storeID) == ["2000000001"])
        for call in [
            { () async throws -> Void in
                _ = try await verifier.verifyApplePurchase(
                    VerifyApplePurchaseRequest(
                        accountID: "user-1", transactionID: "2000000009", idempotencyKey: longest + "k"))
            },
            {
                _ = try await verifier.restorePurchases(
                    RestorePurchasesRequest(
                        accountID: "user-1", appleTransactionIDs: ["2000000009"], idempotencyKey: longest + "k"))
            },
        ] {
            await #expect(throws: RPCError(.invalidArgument, "idempotency_key must be 1 to 128 bytes")) {
                try await call()
            }
        }
        await harness.stop()
    }

    @Test("restores whose keys differ only past their 90th byte are two restores, not one key with two contents")
    func restoreKeysDoNotCollide() async throws {
        let harness = try await GoogleAdapterTests.Harness()
        harness.api.setSubscription("tok-r", harness.purchase())
        let verifier = try verifierClient(google: harness.adapter)
        let prefix = String(repeating: "r", count: 95)
        let purchase = GooglePurchaseRef(
            packageName: GoogleAdapterTests.package, productID: "pro_monthly", purchaseToken: "tok-r")
        _ = try await verifier.restorePurchases(
            RestorePurchasesRequest(accountID: "user-a", googlePurchases: [purchase], idempotencyKey: prefix + "-a"))
        // Another account's restore of the same purchase, under its own key: the transfer policy
        // decides (the default moves it), not a key already used with other content.
        let moved = try await verifier.restorePurchases(
            RestorePurchasesRequest(accountID: "user-b", googlePurchases: [purchase], idempotencyKey: prefix + "-b"))
        #expect(moved.subscriptions.map(\.key.storeID) == ["tok-r"])
        #expect(try await harness.ledger.subscription(harness.key("tok-r"))?.accountID == "user-b")
        await harness.stop()
    }

    @Test("the adapters' bounds are the generated ones, within what the store clients send")
    func boundsAgree() {
        #expect(VerifyApplePurchaseRequest.Limits.idempotencyKey == FieldLimit("idempotency_key", 1...128, .bytes))
        for limit in [
            VerifyApplePurchaseRequest.Limits.idempotencyKey, VerifyGooglePurchaseRequest.Limits.idempotencyKey,
            RestorePurchasesRequest.Limits.idempotencyKey,
        ] {
            // The ledger takes every key the verifier passes on as it is.
            #expect(limit.range == RecordVerifiedStateRequest.Limits.idempotencyKey.range)
            #expect(limit.range == LinkAccountRequest.Limits.idempotencyKey.range)
        }
        #expect(
            VerifyGooglePurchaseRequest.Limits.purchaseToken.maximum <= GooglePlayDeveloperAPIClient.maxTokenBytes)
        #expect(
            VerifyGooglePurchaseRequest.Limits.productID.maximum <= GooglePlayDeveloperAPIClient.maxProductIDBytes)
        #expect(GooglePurchaseRef.Limits.all.map(\.range) == [1...256, 1...4096])
        #expect(
            [VerifyGooglePurchaseRequest.Limits.productID, VerifyGooglePurchaseRequest.Limits.purchaseToken].map(
                \.range)
                == GooglePurchaseRef.Limits.all.map(\.range))
        #expect(
            PurchaseChecks.restoreStepKey(String(repeating: "k", count: 128), "g0").utf8.count
                <= LinkAccountRequest.Limits.idempotencyKey.maximum)
    }
}
