import Clients
import Config
import Crypto
import Foundation
import GooglePlay
import Model
import Observability
import RPC
import Sockets
import TestSupport
import Testing
import Wire

@testable import VerifierService

@Suite("Google Play purchases", .serialized)
struct GoogleAdapterTests {
    static let package = "com.example.app"

    /// A ledger in this process, the adapter over an in-memory Play, and an injected clock.
    final class Harness: Sendable {
        let directory: URL
        let ledger: LedgerClient
        let api = FakeGooglePlayAPI()
        let adapter: GoogleAdapter
        let clock = AppleAdapterHarness.Clock()
        let metrics = MetricsRegistry()

        init(admission: NotificationAdmission.Limits = .default) async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("verifier-google-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            ledger = try await InProcessLedger(directory: directory).client
            let clock = self.clock
            adapter = GoogleAdapter(
                catalog: .init(
                    packages: [GoogleAdapterTests.package], oneTimeProducts: ["lifetime"], consumableProducts: ["coins"]
                ),
                api: api, ledger: ledger, now: { clock.now },
                logger: Logger(service: "verifier-test", minimumLevel: .error, sink: .capturing()), metrics: metrics,
                // A loaded test machine must not turn a slow answer into a 503 the test did not ask for.
                admission: admission, ledgerTimeout: .seconds(60))
        }

        func stop() async {
            try? FileManager.default.removeItem(at: directory)
        }

        /// The value of `series` on the adapter's metrics page, `{store="google"}` added to a bare name.
        func metric(_ series: String) -> Double? {
            metrics.value(series.contains("{") ? series : series + "{store=\"google\"}")
        }

        func iso(_ milliseconds: Int64) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }

        func purchase(
            state: String = "SUBSCRIPTION_STATE_ACTIVE", acknowledged: Bool = false, account: String? = nil,
            linked: String? = nil, product: String = "pro_monthly", days: Int64 = 30
        ) -> SubscriptionPurchaseV2 {
            var purchase = SubscriptionPurchaseV2()
            purchase.subscriptionState = state
            purchase.startTime = iso(clock.milliseconds - 86_400_000)
            purchase.acknowledgementState =
                acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING"
            purchase.linkedPurchaseToken = linked
            if let account {
                var ids = SubscriptionPurchaseV2.ExternalAccountIdentifiers()
                ids.obfuscatedExternalAccountId = account
                purchase.externalAccountIdentifiers = ids
            }
            var item = SubscriptionPurchaseV2.LineItem()
            item.productId = product
            item.expiryTime = iso(clock.milliseconds + days * 86_400_000)
            var plan = SubscriptionPurchaseV2.LineItem.AutoRenewingPlan()
            plan.autoRenewEnabled = true
            item.autoRenewingPlan = plan
            item.latestSuccessfulOrderId = "GPA.1234-5678-9012-34567"
            purchase.lineItems = [item]
            return purchase
        }

        func key(_ token: String) -> SubscriptionKey {
            SubscriptionKey(store: .google, environment: .production, storeID: token)
        }
    }

    @Test("a verified purchase is recorded, linked, then acknowledged; verifying it again does not acknowledge twice")
    func verifyRecordsThenAcknowledges() async throws {
        let harness = try await Harness()
        harness.api.setSubscription("tok-1.AO-J1Oz", harness.purchase(account: Digest.sha256Hex(Array("user-1".utf8))))
        let request = VerifyGooglePurchaseRequest(
            accountID: "user-1", packageName: Self.package, productID: "pro_monthly", purchaseToken: "tok-1.AO-J1Oz",
            idempotencyKey: "g-1")
        let response = try await harness.adapter.verifyPurchase(request)
        #expect(response.newlyLinked && response.subscription?.accountID == "user-1")
        #expect(response.subscription?.acknowledged == true && response.subscription?.state == .active)
        // The acknowledgement is recorded with the purchase as Google reads it after the call.
        #expect(harness.api.calls == ["get tok-1.AO-J1Oz", "acknowledge tok-1.AO-J1Oz", "get tok-1.AO-J1Oz"])
        // The ledger had the purchase before Google heard of the acknowledgement.
        let history = try await harness.ledger.getHistory(
            GetHistoryRequest(key: harness.key("tok-1.AO-J1Oz")))
        #expect(history.events.map(\.kind).reversed().prefix(3) == [.stateRefreshed, .accountLinked, .acknowledged])
        _ = try await harness.adapter.verifyPurchase(request)
        #expect(harness.api.calls.filter { $0.hasPrefix("acknowledge") }.count == 1)
        await harness.stop()
    }

    @Test("a failed acknowledgement is queued and retried by reconciliation until Google takes it")
    func failedAcknowledgementRetried() async throws {
        let harness = try await Harness()
        harness.api.setSubscription("tok-2", harness.purchase())
        harness.api.setFailAcknowledgements(true)
        let response = try await harness.adapter.verifyPurchase(
            VerifyGooglePurchaseRequest(
                accountID: "user-2", packageName: Self.package, productID: "pro_monthly", purchaseToken: "tok-2",
                idempotencyKey: "g-2"))
        #expect(response.subscription?.acknowledged == false)
        let queued = try await harness.ledger.listInbox(ListInboxRequest(status: .failed, store: .google))
        #expect(queued.entries.map(\.notificationType) == ["ACKNOWLEDGE"])
        let reconciler = GoogleReconciler(adapter: harness.adapter, interval: .zero)
        await reconciler.runPass()  // still failing
        // The pass itself completed: it listed what it had to; the acknowledgement waits.
        #expect(harness.metric(#"reconciliation_passes_total{outcome="completed",store="google"}"#) == 1)
        #expect(
            try await harness.ledger.listInbox(ListInboxRequest(status: .failed, store: .google)).entries.first?
                .attempts == 2)
        harness.api.setFailAcknowledgements(false)
        await reconciler.runPass()
        #expect(try await harness.ledger.listInbox(ListInboxRequest(status: .failed, store: .google)).entries.isEmpty)
        #expect(try await harness.ledger.subscription(harness.key("tok-2"))?.acknowledged == true)
        #expect(harness.api.calls.filter { $0.hasPrefix("acknowledge") }.count == 3)
        await harness.stop()
    }

    @Test("reconciliation refreshes a purchase in grace; a refresh that changes the recorded state is a change found")
    func refreshesInGrace() async throws {
        let harness = try await Harness()
        harness.api.setSubscription(
            "tok-grace", harness.purchase(state: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", acknowledged: true))
        _ = try await harness.adapter.verifyPurchase(
            VerifyGooglePurchaseRequest(
                accountID: "user-9", packageName: Self.package, productID: "pro_monthly", purchaseToken: "tok-grace",
                idempotencyKey: "g-9"))
        #expect(try await harness.ledger.subscription(harness.key("tok-grace"))?.state == .gracePeriod)
        let reconciler = GoogleReconciler(adapter: harness.adapter, interval: .zero)
        await reconciler.runPass()
        #expect(harness.metric("reconciliation_subscriptions_refreshed_total") == 1)
        #expect(harness.metric("reconciliation_changes_found_total") == 0)
        // The payment went through and no notification came: the next pass finds it.
        harness.api.setSubscription("tok-grace", harness.purchase(acknowledged: true))
        await reconciler.runPass()
        #expect(harness.metric("reconciliation_subscriptions_refreshed_total") == 2)
        #expect(harness.metric("reconciliation_changes_found_total") == 1)
        #expect(try await harness.ledger.subscription(harness.key("tok-grace"))?.state == .active)
        await harness.stop()
    }

    @Test("another account's obfuscated id is PERMISSION_DENIED, and nothing is linked or acknowledged")
    func otherAccount() async throws {
        let harness = try await Harness()
        harness.api.setSubscription("tok-3", harness.purchase(account: "someone-else"))
        let verifier = try verifierClient(google: harness.adapter)
        await #expect(
            throws: RPCError(
                .permissionDenied, "the purchase was made for another account (obfuscatedExternalAccountId)")
        ) {
            _ = try await verifier.verifyGooglePurchase(
                VerifyGooglePurchaseRequest(
                    accountID: "user-3", packageName: Self.package, productID: "pro_monthly", purchaseToken: "tok-3",
                    idempotencyKey: "g-3"))
        }
        #expect(try await harness.ledger.subscription(harness.key("tok-3"))?.accountID == nil)
        #expect(!harness.api.calls.contains { $0.hasPrefix("acknowledge") })
        await harness.stop()
    }

    @Test("an import's restore records an imported event; another account's purchase is its outcome, not a failure")
    func importRestore() async throws {
        let harness = try await Harness()
        harness.api.setSubscription("tok-7", harness.purchase())
        harness.api.setSubscription("tok-8", harness.purchase(account: "someone-else"))
        let verifier = try verifierClient(google: harness.adapter)
        let purchases = ["tok-7", "tok-8"].map {
            GooglePurchaseRef(packageName: Self.package, productID: "pro_monthly", purchaseToken: $0)
        }
        let request = RestorePurchasesRequest(
            accountID: "user-7", googlePurchases: purchases, idempotencyKey: "import-7",
            reason: "migration (p.csv row 1)")
        let response = try await verifier.restorePurchases(request)
        #expect(
            response.restored == [
                RestoredPurchase(key: harness.key("tok-7"), link: .linked),
                RestoredPurchase(key: harness.key("tok-8"), link: .kept),
            ])
        let history = try await harness.ledger.getHistory(GetHistoryRequest(key: harness.key("tok-7")))
        let imported = try #require(history.events.first { $0.kind == .imported })
        #expect(imported.reason == "migration (p.csv row 1)" && imported.actor?.isEmpty == false)
        // Run again: the held purchase is answered from the ledger, Play is asked only about the other.
        let calls = harness.api.calls.count
        let again = try await verifier.restorePurchases(request)
        #expect(again.restored.first == RestoredPurchase(key: harness.key("tok-7"), link: .alreadyRecorded))
        #expect(harness.api.calls.dropFirst(calls).allSatisfy { $0.hasSuffix("tok-8") })
        await harness.stop()
    }

    @Test("the ledger's refusal reaches the caller as the ledger gave it; a refresh of an unknown token is NOT_FOUND")
    func ledgerRefusalPassesThrough() async throws {
        let harness = try await Harness()
        harness.api.setSubscription("tok-a", harness.purchase())
        harness.api.setSubscription("tok-b", harness.purchase())
        let verifier = try verifierClient(google: harness.adapter)
        _ = try await verifier.verifyGooglePurchase(
            .init(
                accountID: "user-8", packageName: Self.package, productID: "pro_monthly", purchaseToken: "tok-a",
                idempotencyKey: "g-8"))
        await #expect(
            throws: RPCError(.failedPrecondition, #"idempotency key "g-8" was already used with a different request"#)
        ) {
            _ = try await verifier.verifyGooglePurchase(
                .init(
                    accountID: "user-8", packageName: Self.package, productID: "pro_monthly", purchaseToken: "tok-b",
                    idempotencyKey: "g-8"))
        }
        await #expect(throws: RPCError(.notFound, "the ledger has no Google purchase tok-c…; verify it first")) {
            _ = try await verifier.refreshSubscription(.init(key: harness.key("tok-c")))
        }
        await harness.stop()
    }

    @Test("bad requests are refused before Google is asked")
    func badRequests() async throws {
        let harness = try await Harness()
        let verifier = try verifierClient(google: harness.adapter)
        func verify(_ request: VerifyGooglePurchaseRequest) async -> RPCError? {
            do {
                _ = try await verifier.verifyGooglePurchase(request)
                return nil
            } catch {
                return error
            }
        }
        #expect(
            await verify(
                .init(accountID: "u", packageName: "com.other", productID: "p", purchaseToken: "t", idempotencyKey: "k")
            ) == RPCError(.failedPrecondition, "package com.other is not served by this verifier"))
        #expect(
            await verify(
                .init(accountID: "u", packageName: Self.package, productID: "p", purchaseToken: "", idempotencyKey: "k")
            ) == RPCError(.invalidArgument, "purchase_token must be 1 to 4096 bytes"))
        #expect(
            await verify(
                .init(accountID: "u", packageName: Self.package, productID: "", purchaseToken: "t", idempotencyKey: "k")
            ) == RPCError(.invalidArgument, "product_id must be 1 to 256 bytes"))
        #expect(
            await verify(
                .init(accountID: "", packageName: Self.package, productID: "p", purchaseToken: "t", idempotencyKey: "k")
            ) == RPCError(.invalidArgument, "account_id must be 1 to 256 bytes"))
        harness.api.setSubscription("tok-4", harness.purchase(product: "pro_yearly"))
        #expect(
            await verify(
                .init(
                    accountID: "u", packageName: Self.package, productID: "pro_monthly", purchaseToken: "tok-4",
                    idempotencyKey: "k"))
                == RPCError(.invalidArgument, "the purchase token is not for product pro_monthly"))
        #expect(harness.api.calls == ["get tok-4"])
        await harness.stop()
    }

    @Test("a token Play does not know is NOT_FOUND saying how it was looked up and what to check")
    func unknownToken() async throws {
        let harness = try await Harness()
        let verifier = try verifierClient(google: harness.adapter)
        let check = "check purchase_token (the app's Purchase.getPurchaseToken(), whole)"
        for (product, message) in [
            (
                "pro_monthly",
                "as a subscription (pro_monthly is not in GOOGLE_ONE_TIME_PRODUCTS) (HTTP 404: no such token); \(check)"
            ),
            ("lifetime", "as one-time product lifetime (HTTP 404: no such token); \(check) and product_id"),
        ] {
            await #expect(
                throws: RPCError(
                    .notFound, "Google Play has no purchase of com.example.app with this purchase_token \(message)")
            ) {
                _ = try await verifier.verifyGooglePurchase(
                    .init(
                        accountID: "user-9", packageName: Self.package, productID: product,
                        purchaseToken: "tok-mistyped", idempotencyKey: "g-\(product)"))
            }
        }
        await harness.stop()
    }

    @Test("an upgrade's new token continues the old one's subscription for the same account; the old one ends")
    func lineage() async throws {
        let harness = try await Harness()
        harness.api.setSubscription("old-tok", harness.purchase(acknowledged: true))
        _ = try await harness.adapter.verifyPurchase(
            VerifyGooglePurchaseRequest(
                accountID: "user-5", packageName: Self.package, productID: "pro_monthly", purchaseToken: "old-tok",
                idempotencyKey: "g-5"))
        harness.clock.advance(seconds: 60)
        var old = harness.purchase(state: "SUBSCRIPTION_STATE_EXPIRED", acknowledged: true, days: 0)
        old.canceledStateContext = SubscriptionPurchaseV2.CanceledStateContext()
        old.canceledStateContext?.replacementCancellation = SubscriptionPurchaseV2.Empty()
        harness.api.setSubscription("old-tok", old)
        harness.api.setSubscription("new-tok", harness.purchase(linked: "old-tok", product: "pro_yearly", days: 365))
        await harness.adapter.process(
            messageID: "m-1", packageName: Self.package, eventTime: harness.clock.milliseconds,
            work: .subscription(type: 4, token: "new-tok", productID: "pro_yearly"))
        await harness.adapter.process(
            messageID: "m-2", packageName: Self.package, eventTime: harness.clock.milliseconds,
            work: .subscription(type: 13, token: "old-tok", productID: "pro_monthly"))
        let continued = try #require(try await harness.ledger.subscription(harness.key("new-tok")))
        #expect(continued.accountID == "user-5" && continued.replacesStoreID == "old-tok" && continued.state == .active)
        // Linked through the lineage, so the new purchase is acknowledged without a VerifyPurchase,
        // at Google as well as in the ledger (Play revokes a purchase not acknowledged in 3 days).
        #expect(continued.acknowledged)
        #expect(harness.api.calls.contains("acknowledge new-tok"))
        let replaced = try #require(try await harness.ledger.subscription(harness.key("old-tok")))
        #expect(replaced.state == .expired && replaced.replacedByStoreID == "new-tok")
        let account = try await harness.ledger.account("user-5")
        #expect(Set(account.subscriptions.map(\.key.storeID)) == ["old-tok", "new-tok"])
        await harness.stop()
    }

    @Test("a lifetime unlock is acknowledged, a consumable consumed, and a voided purchase revoked from its void time")
    func oneTimeProductsAndVoids() async throws {
        let harness = try await Harness()
        var lifetime = ProductPurchase()
        lifetime.purchaseState = 0
        lifetime.acknowledgementState = 0
        lifetime.purchaseTimeMillis = String(harness.clock.milliseconds - 1000)
        lifetime.orderId = "GPA.0000-0000-0000-00001"
        harness.api.setProduct("life-tok", lifetime)
        harness.api.setProduct("coin-tok", lifetime)
        let unlocked = try await harness.adapter.verifyPurchase(
            VerifyGooglePurchaseRequest(
                accountID: "user-6", packageName: Self.package, productID: "lifetime", purchaseToken: "life-tok",
                idempotencyKey: "g-6"))
        #expect(unlocked.subscription?.productKind == .nonConsumable && unlocked.subscription?.state == .active)
        let coins = try await harness.adapter.verifyPurchase(
            VerifyGooglePurchaseRequest(
                accountID: "user-6", packageName: Self.package, productID: "coins", purchaseToken: "coin-tok",
                idempotencyKey: "g-7"))
        #expect(coins.subscription?.productKind == .consumable)
        #expect(
            harness.api.calls.contains("acknowledge-product life-tok") && harness.api.calls.contains("consume coin-tok")
        )
        let voidTime = harness.clock.milliseconds - 500
        var voided = VoidedPurchase()
        voided.purchaseToken = "life-tok"
        voided.orderId = "GPA.0000-0000-0000-00001"
        voided.voidedTimeMillis = String(voidTime)
        harness.api.addVoided(voided)
        await GoogleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        #expect(harness.metrics.value("reconciliation_voided_purchases_found_total") == 1)
        #expect(harness.metric("reconciliation_transactions_discovered_total") == 1)
        // The voided order's period is revoked from the void time.
        let revoked = try #require(try await harness.ledger.subscription(harness.key("life-tok")))
        #expect(revoked.periods.map(\.revokedTimeMilliseconds) == [voidTime])
        #expect(revoked.periods.map(\.revocationReason) == ["VOIDED_PURCHASE"])
        let cursor = try await harness.ledger.getCursor(GetCursorRequest(name: "google-voided-\(Self.package)"))
        #expect(cursor.value == harness.clock.milliseconds)
        // The next pass lists the void again (an hour of overlap): it was applied, so nothing is found.
        harness.clock.advance(seconds: 60)
        await GoogleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        #expect(harness.metrics.value("reconciliation_voided_purchases_found_total") == 1)
        #expect(harness.metric("reconciliation_transactions_discovered_total") == 1)
        #expect(harness.metric(#"reconciliation_passes_total{outcome="completed",store="google"}"#) == 2)
        await harness.stop()
    }
}
