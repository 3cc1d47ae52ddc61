import Crypto
import Foundation
import GooglePlay
import HTTP
import HTTPClient
import Observability
import StoreSimKit
import TestSupport
import Testing

/// The simulated Google Play against the verifier's own Google code: the service-account token
/// exchange, `subscriptionsv2.get`, acknowledge and voided purchases through
/// `GooglePlayDeveloperAPIClient` over real HTTP, and every push authenticated by
/// `PubSubPushAuthenticator` and decoded as the verifier decodes it.
@Suite("Store simulator: Google Play")
struct GoogleSimStoreTests {
    static let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    static let day: Int64 = 86_400_000
    static let package = "com.example.app"

    /// A store served over HTTP with the verifier's client pointed at it.
    final class Harness: @unchecked Sendable {  // used from one test task at a time
        let wire: GooglePlayWire
        let client: GooglePlayDeveloperAPIClient
        var store: GoogleSimStore { wire.store }

        init(grace: Int = 7) throws {
            var configuration = GoogleSimConfiguration(
                packageName: GoogleSimStoreTests.package,
                products: [
                    GoogleSimProduct(id: "pro_sub", basePlanID: "monthly", period: .months(1)),
                    GoogleSimProduct(id: "premium_sub", basePlanID: "monthly", period: .months(1)),
                ])
            configuration.gracePeriodDays = grace
            wire = try GooglePlayWire(configuration)
            client = try GooglePlayWire.client(
                port: wire.server.port, tokenURL: wire.api.identity.tokenURL, key: wire.accountKey)
        }

        /// A purchase of `pro_sub`, acknowledged through the client; returns its token.
        func boughtAndAcknowledged() async throws -> String {
            let token = try store.buy(productID: "pro_sub")
            try await client.acknowledgeSubscription(
                packageName: GoogleSimStoreTests.package, subscriptionID: "pro_sub", token: token)
            return token
        }

        /// Each push since the last call, authenticated and decoded: (message id, type code or
        /// "voided", token).
        func pushes() async throws -> [(String, String, String)] {
            var decoded: [(String, String, String)] = []
            for message in store.takeOutbox() {
                let (body, bearer) = try wire.api.push(message)
                let (envelope, notification) = try await GooglePlayWire.received(
                    [UInt8](body), bearer: bearer, by: wire.authenticator)
                #expect(envelope.messageID == message.id)
                #expect(notification.packageName == GoogleSimStoreTests.package)
                switch notification.kind {
                case .subscription(let subscription):
                    decoded.append(
                        (message.id, "\(subscription.notificationType.rawValue)", subscription.purchaseToken))
                case .voidedPurchase(let voided):
                    decoded.append((message.id, "voided", voided.purchaseToken))
                default:
                    Issue.record("an unexpected notification \(notification.kind)")
                }
            }
            return decoded
        }
    }

    @Test("a purchase is read, acknowledged and renewed through the verifier's client; every push authenticates")
    func purchaseAndRenewals() async throws {
        let harness = try Harness()
        let token = try harness.store.buy(productID: "pro_sub", obfuscatedAccountID: "acct-1")
        #expect(token.count == 150 && token.contains(".AO-J1O"))
        var purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_PENDING")
        #expect(purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId == "acct-1")
        #expect(purchase.lineItems?.first?.offerDetails?.basePlanId == "monthly")
        #expect(purchase.lineItems?.first?.expiryTime == "2026-02-01T00:00:00.000Z")
        try await harness.client.acknowledgeSubscription(
            packageName: Self.package, subscriptionID: "pro_sub", token: token)
        purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        for _ in 0..<3 { harness.store.advance(by: 31 * Self.day) }
        #expect(try await harness.pushes().map(\.1) == ["4", "2", "2", "2"])
        purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.lineItems?.first?.expiryTime == "2026-05-01T00:00:00.000Z")
        #expect(purchase.latestOrderId?.hasSuffix("..2") == true)
    }

    @Test("payment failure: grace (access until its end), then account hold, then recovery; or expiry after hold")
    func graceAndHold() async throws {
        let harness = try Harness()
        let token = try await harness.boughtAndAcknowledged()
        try harness.store.failPayment(token)
        harness.store.advance(by: 32 * Self.day)
        var purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_IN_GRACE_PERIOD")
        #expect(purchase.lineItems?.first?.expiryTime == "2026-02-08T00:00:00.000Z")
        harness.store.advance(by: 7 * Self.day)
        purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ON_HOLD")
        try harness.store.recover(token)
        purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        // Recovered from hold: the new period starts at the recovery (2026-02-09).
        #expect(purchase.lineItems?.first?.expiryTime == "2026-03-09T00:00:00.000Z")
        #expect(try await harness.pushes().map(\.1) == ["4", "6", "5", "1"])

        try harness.store.failPayment(token)
        harness.store.advance(by: 70 * Self.day)
        purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_EXPIRED")
        #expect(purchase.canceledStateContext?.systemInitiatedCancellation != nil)
        #expect(try await harness.pushes().map(\.1) == ["6", "5", "13"])
    }

    @Test("a recovery within grace keeps the paid days: the period runs from the renewal date that failed")
    func recoveryInGrace() async throws {
        let harness = try Harness()
        let token = try await harness.boughtAndAcknowledged()
        try harness.store.failPayment(token)
        harness.store.advance(by: 33 * Self.day)
        try harness.store.recover(token)
        let purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(purchase.lineItems?.first?.expiryTime == "2026-03-01T00:00:00.000Z")
        #expect(try await harness.pushes().map(\.1) == ["4", "6", "1"])
    }

    @Test("cancel and restart, pause and resume, an immediate plan change through linkedPurchaseToken")
    func cancellationPauseAndReplacement() async throws {
        let harness = try Harness()
        let token = try await harness.boughtAndAcknowledged()
        try harness.store.cancel(token)
        var purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_CANCELED")
        // Play leaves autoRenewEnabled out when it is false.
        #expect(purchase.lineItems?.first?.autoRenewingPlan != nil)
        #expect(purchase.lineItems?.first?.autoRenewingPlan?.autoRenewEnabled == nil)
        #expect(purchase.canceledStateContext?.userInitiatedCancellation?.cancelTime == "2026-01-01T00:00:00.000Z")
        try harness.store.restart(token)
        try harness.store.pause(token, length: 30 * Self.day)
        harness.store.advance(by: 32 * Self.day)
        purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_PAUSED")
        #expect(purchase.pausedStateContext?.autoResumeTime == "2026-03-03T00:00:00.000Z")
        try harness.store.resume(token)
        let next = try #require(try harness.store.changeProduct(token, to: "premium_sub", immediately: true))
        let replacement = try await harness.client.subscription(packageName: Self.package, token: next)
        #expect(replacement.linkedPurchaseToken == token && replacement.lineItems?.first?.productId == "premium_sub")
        purchase = try await harness.client.subscription(packageName: Self.package, token: token)
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_EXPIRED")
        #expect(purchase.canceledStateContext?.replacementCancellation != nil)
        #expect(try await harness.pushes().map(\.1) == ["4", "3", "7", "11", "10", "2", "4", "13"])
    }

    @Test("a refund voids and revokes; an unacknowledged purchase is refunded after three days")
    func refundsAndTheAcknowledgementRule() async throws {
        let harness = try Harness()
        let refunded = try await harness.boughtAndAcknowledged()
        let forgotten = try harness.store.buy(productID: "pro_sub")
        harness.store.advance(by: Self.day)
        try harness.store.refund(refunded)
        harness.store.advance(by: 2 * Self.day)
        let pushes = try await harness.pushes()
        #expect(pushes.map(\.1) == ["4", "4", "12", "13", "voided", "12", "13", "voided"])
        #expect(pushes[7].2 == forgotten)
        let voided = try await harness.client.voidedPurchases(
            packageName: Self.package, start: Date(timeIntervalSince1970: Double(Self.start) / 1000),
            end: Date(timeIntervalSince1970: Double(harness.store.clock.now + 1) / 1000))
        #expect(voided.map(\.purchaseToken) == [refunded, forgotten])
        #expect(voided.first?.voidedTimeMillis == String(Self.start + Self.day))
        let unknown = await #expect(throws: GooglePlayAPIError.self) {
            _ = try await harness.client.subscription(packageName: Self.package, token: "unknown-token")
        }
        #expect(unknown?.code == .notFound && unknown?.httpStatus == 404)
    }
}
