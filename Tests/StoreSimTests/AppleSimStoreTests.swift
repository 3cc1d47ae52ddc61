import AppStore
import Crypto
import Foundation
import HTTP
import HTTPClient
import Observability
import StoreSimKit
import Testing

/// The simulated App Store against the verifier's own reading of Apple's data: every payload it
/// signs passes `AppleSignedDataVerifier` with the simulator's root as the anchor, and its App
/// Store Server API answers `AppStoreServerAPIClient` over real HTTP.
@Suite("Store simulator: App Store")
struct AppleSimStoreTests {
    static let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    static let day: Int64 = 86_400_000
    static let monthly = AppleSimProduct(id: "com.example.pro.monthly", group: "pro", period: .months(1), level: 2)
    static let premium = AppleSimProduct(id: "com.example.premium.monthly", group: "pro", period: .months(1), level: 1)
    static let chain = try! AppleSigningChain.generate(now: Date(timeIntervalSince1970: Double(start) / 1000))

    static func store(grace: Int? = 16) -> AppleSimStore {
        AppleSimStore(
            configuration: AppleSimConfiguration(
                bundleID: "com.example.app", appAppleID: 1_234_567_890, gracePeriodDays: grace,
                products: [monthly, premium]),
            clock: SimClock(startMilliseconds: start), chain: chain)
    }

    static let verifier = try! AppleSignedDataVerifier(
        anchors: [chain.root], configuration: .init(bundleID: "com.example.app", environment: .sandbox))

    /// Each notification since the last call as (type, subtype, status, newest transaction),
    /// verified and decoded the way the verifier does.
    static func drain(_ store: AppleSimStore) throws -> [(String, String?, Int?, AppleTransaction)] {
        try store.takeOutbox().map { sent in
            let notification = try verifier.verifyNotification(sent.signedPayload)
            #expect(notification.notificationUUID == sent.uuid)
            #expect(notification.signedDate == sent.signedDate)
            let transaction = try verifier.verifyTransaction(try #require(notification.data?.signedTransactionInfo))
            _ = try verifier.verifyRenewalInfo(try #require(notification.data?.signedRenewalInfo))
            return (
                notification.notificationType.rawValue, notification.subtype?.rawValue, notification.data?.status,
                transaction
            )
        }
    }

    static func kinds(_ store: AppleSimStore) throws -> [String] {
        try drain(store).map { event in event.1.map { "\(event.0)/\($0)" } ?? event.0 }
    }

    @Test(
        "a purchase renews each month by the calendar, twelve times, each renewal a new transaction starting at the old expiry"
    )
    func renewals() throws {
        let store = Self.store()
        let token = "0F8FAD5B-D9CB-469F-A165-70867728950E"
        let original = try store.buy(productID: Self.monthly.id, appAccountToken: token)
        let bought = try Self.drain(store)
        #expect(bought.count == 1 && bought[0].0 == "SUBSCRIBED" && bought[0].1 == "INITIAL_BUY" && bought[0].2 == 1)
        #expect(bought[0].3.originalTransactionId == original && bought[0].3.appAccountToken == token.lowercased())
        #expect(bought[0].3.expiresDate == 1_769_904_000_000)  // 2026-02-01
        var ids: Set<String> = [original]
        for _ in 0..<12 { store.advance(by: 31 * Self.day) }
        let renewals = try Self.drain(store)
        #expect(renewals.map(\.0) == Array(repeating: "DID_RENEW", count: 12))
        for renewal in renewals {
            #expect(renewal.3.originalTransactionId == original && renewal.3.transactionReason == "RENEWAL")
            ids.insert(try #require(renewal.3.transactionId))
        }
        #expect(ids.count == 13)
        // The twelfth renewal runs from 2027-01-01 to 2027-02-01, whatever the months' lengths.
        #expect(renewals.last?.3.purchaseDate == 1_798_761_600_000 && renewals.last?.3.expiresDate == 1_801_440_000_000)
    }

    @Test("cancel, then the subscription expires at the end of the period: EXPIRED/VOLUNTARY, status 2")
    func cancelThenExpire() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        try store.cancel(id)
        store.advance(by: 10 * Self.day)
        #expect(try Self.kinds(store) == ["SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED"])
        store.advance(by: 30 * Self.day)
        let expired = try Self.drain(store)
        #expect(expired.map { "\($0.0)/\($0.1 ?? "")/\($0.2 ?? 0)" } == ["EXPIRED/VOLUNTARY/2"])
        #expect(throws: SimError(.conflict, "\(id) is not active")) { try store.changeProduct(id, to: Self.premium.id) }
    }

    @Test("payment failure: grace, then billing retry, then expiry after 60 days; or recovery inside them")
    func billingFailure() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        try store.failPayment(id)
        store.advance(by: 32 * Self.day)
        store.advance(by: 20 * Self.day)
        store.advance(by: 60 * Self.day)
        let events = try Self.drain(store)
        #expect(
            events.map { "\($0.0)/\($0.1 ?? "")/\($0.2 ?? 0)" } == [
                "SUBSCRIBED/INITIAL_BUY/1", "DID_FAIL_TO_RENEW/GRACE_PERIOD/4", "GRACE_PERIOD_EXPIRED//3",
                "EXPIRED/BILLING_RETRY/2",
            ])

        let recovering = Self.store()
        let other = try recovering.buy(productID: Self.monthly.id)
        try recovering.failPayment(other)
        recovering.advance(by: 33 * Self.day)
        try recovering.recover(other)
        let recovered = try Self.drain(recovering)
        #expect(recovered.map(\.0) == ["SUBSCRIBED", "DID_FAIL_TO_RENEW", "DID_RENEW"])
        #expect(recovered.last?.1 == "BILLING_RECOVERY" && recovered.last?.2 == 1)
        // The new period starts at the recovery.
        #expect(recovered.last?.3.purchaseDate == recovering.clock.now)
        // Recovered within grace: the new period runs from the renewal date that failed.
        #expect(recovered.last?.3.expiresDate == 1_772_323_200_000)  // 2026-03-01
    }

    @Test("without grace a failed renewal goes straight to billing retry")
    func noGrace() throws {
        let store = Self.store(grace: nil)
        let id = try store.buy(productID: Self.monthly.id)
        try store.failPayment(id)
        store.advance(by: 32 * Self.day)
        let events = try Self.drain(store)
        #expect(
            events.map { "\($0.0)/\($0.1 ?? "")/\($0.2 ?? 0)" } == ["SUBSCRIBED/INITIAL_BUY/1", "DID_FAIL_TO_RENEW//3"])
    }

    @Test("refund revokes from now and its reversal restores; an upgrade is at once, a downgrade at renewal")
    func refundsAndProductChanges() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        store.advance(by: 5 * Self.day)
        try store.refund(id)
        let refunded = try Self.drain(store).last!
        #expect(refunded.0 == "REFUND" && refunded.2 == 5 && refunded.3.revocationDate == store.clock.now)
        #expect(throws: SimError(.conflict, "\(id) is already revoked")) { try store.refund(id) }
        try store.reverseRefund(id)
        let reversed = try Self.drain(store).last!
        #expect(reversed.0 == "REFUND_REVERSED" && reversed.2 == 1 && reversed.3.revocationDate == nil)

        try store.changeProduct(id, to: Self.premium.id)
        let upgrade = try Self.drain(store).last!
        #expect(upgrade.0 == "DID_CHANGE_RENEWAL_PREF" && upgrade.1 == "UPGRADE")
        #expect(upgrade.3.productId == Self.premium.id && upgrade.3.purchaseDate == store.clock.now)
        let history = try store.history(id).map { try Self.verifier.verifyTransaction($0) }
        // Upgraded, not refunded: Apple marks the old transaction with isUpgraded alone.
        #expect(history.count == 2 && history[0].isUpgraded == true && history[0].revocationDate == nil)

        try store.changeProduct(id, to: Self.monthly.id)
        #expect(try Self.kinds(store) == ["DID_CHANGE_RENEWAL_PREF/DOWNGRADE"])
        store.advance(by: 32 * Self.day)
        let renewed = try Self.drain(store)
        #expect(renewed.map(\.0) == ["DID_RENEW"] && renewed[0].3.productId == Self.monthly.id)
    }

    @Test(
        "product changes by Apple's rules: same level and period at once, back to the current product cancels a pending change"
    )
    func productChangeRules() throws {
        let sameLevel = AppleSimProduct(id: "com.example.pro.monthly.b", group: "pro", period: .months(1), level: 2)
        let yearly = AppleSimProduct(id: "com.example.pro.yearly", group: "pro", period: .years(1), level: 2)
        let store = AppleSimStore(
            configuration: AppleSimConfiguration(
                bundleID: "com.example.app", appAppleID: 1_234_567_890,
                products: [Self.monthly, Self.premium, sameLevel, yearly]),
            clock: SimClock(startMilliseconds: Self.start), chain: Self.chain)
        let id = try store.buy(productID: Self.monthly.id)
        _ = try Self.drain(store)
        try store.changeProduct(id, to: sameLevel.id)
        let crossgrade = try Self.drain(store)
        #expect(crossgrade.map { "\($0.0)/\($0.1 ?? "")" } == ["DID_CHANGE_RENEWAL_PREF/UPGRADE"])
        #expect(crossgrade.first?.3.productId == sameLevel.id)
        try store.changeProduct(id, to: yearly.id)
        #expect(try Self.kinds(store) == ["DID_CHANGE_RENEWAL_PREF/DOWNGRADE"])
        try store.changeProduct(id, to: sameLevel.id)
        #expect(try Self.kinds(store) == ["DID_CHANGE_RENEWAL_PREF"])
        store.advance(by: 32 * Self.day)
        let renewed = try Self.drain(store)
        #expect(renewed.map(\.0) == ["DID_RENEW"] && renewed.first?.3.productId == sameLevel.id)
        try store.cancel(id)
        store.advance(by: 31 * Self.day)
        _ = try Self.drain(store)
        #expect(throws: SimError(.conflict, "\(id) has ended: a new purchase would start it again")) {
            try store.resubscribe(id)
        }
    }

    @Test("family sharing is revoked with REVOKE; a purchase that is not shared cannot be")
    func familySharing() throws {
        let store = Self.store()
        let shared = try store.buy(productID: Self.monthly.id, familyShared: true)
        let own = try store.buy(productID: Self.monthly.id)
        try store.revokeFamilySharing(shared)
        let events = try Self.drain(store)
        #expect(events.map(\.0) == ["SUBSCRIBED", "SUBSCRIBED", "REVOKE"])
        #expect(events[0].3.inAppOwnershipType == "FAMILY_SHARED" && events[2].2 == 5)
        #expect(throws: SimError(.conflict, "\(own) is not a family-shared purchase")) {
            try store.revokeFamilySharing(own)
        }
        #expect(throws: SimError(.notFound, "no transaction 42")) { try store.cancel("42") }
        #expect(throws: SimError(.notFound, "no product gold")) { try store.buy(productID: "gold") }
    }

    @Test(
        "family sharing revoked while a renewal charged early waits: the revocation date on the newest or the one in force, the seed drawing either"
    )
    func familyRevocationMarks() throws {
        // A second before the first month ends, when its renewal (charged up to a day early)
        // waits to start.
        func sharedWithRenewalWaiting(seed: UInt64) throws -> (AppleSimStore, String) {
            let store = AppleSimStore(
                configuration: AppleSimConfiguration(
                    bundleID: "com.example.app", appAppleID: 1_234_567_890, products: [Self.monthly],
                    renewalSeed: seed),
                clock: SimClock(startMilliseconds: Self.start), chain: Self.chain)
            let shared = try store.buy(productID: Self.monthly.id, familyShared: true)
            store.advance(by: 31 * Self.day - 1000)
            #expect(try Self.kinds(store) == ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"])
            return (store, shared)
        }
        let now = Self.start + 31 * Self.day - 1000
        for (mark, marked) in [(AppleSimRevocationMark.newest, 1), (.inForce, 0)] {
            let (store, shared) = try sharedWithRenewalWaiting(seed: 1)
            try store.revokeFamilySharing(shared, marking: mark)
            let revoke = try #require(try Self.drain(store).first)
            #expect(revoke.0 == "REVOKE" && revoke.2 == 5)
            let history = try store.history(shared).map { try Self.verifier.verifyTransaction($0) }
            #expect(history.count == 2 && history[1].purchaseDate == Self.start + 31 * Self.day)
            #expect(revoke.3.transactionId == history[marked].transactionId)
            #expect(history.map(\.revocationDate) == (0..<2).map { $0 == marked ? now : nil })
            #expect(history.allSatisfy { $0.revocationReason == nil })
        }
        // Left to the seed, both happen.
        var drawn = Set<String>()
        for seed in UInt64(0)..<16 {
            let (store, shared) = try sharedWithRenewalWaiting(seed: seed)
            try store.revokeFamilySharing(shared)
            let revoke = try #require(try Self.drain(store).first)
            drawn.insert(revoke.3.transactionId == shared ? "in force" : "newest")
        }
        #expect(drawn == ["in force", "newest"])
    }

    @Test("the App Store Server API answers the verifier's client over HTTP, and refuses a token it did not sign")
    func serverAPI() async throws {
        let store = Self.store()
        let key = try PrivateKey.generate(.p256)
        let api = AppleSimAPI(
            store: store,
            credentials: .init(
                keyID: "SIMKEY1234", issuerID: "sim-issuer", publicKey: try PublicKey(pem: key.publicKeyPEM())))
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "storesim", sink: .capturing()))
        api.register(on: server)
        try server.start()
        defer { server.stop() }
        let base = URL(string: "http://127.0.0.1:\(server.port)")!
        func client(_ key: PrivateKey) throws -> AppStoreServerAPIClient {
            var configuration = AppStoreServerAPIClient.Configuration(
                keyID: "SIMKEY1234", issuerID: "sim-issuer", bundleID: "com.example.app", privateKey: key)
            configuration.sandboxBaseURL = base
            configuration.maxAttempts = 1
            return try AppStoreServerAPIClient(configuration: configuration)
        }
        let apple = try client(key)

        let id = try store.buy(productID: Self.monthly.id)
        for _ in 0..<24 { store.advance(by: 31 * Self.day) }
        let statuses = try await apple.allSubscriptionStatuses(transactionID: id, environment: .sandbox)
        #expect(statuses.bundleId == "com.example.app" && statuses.data.first?.subscriptionGroupIdentifier == "pro")
        let last = try #require(statuses.data.first?.lastTransactions.first)
        #expect(last.status == 1 && last.originalTransactionId == id)
        let renewal = try Self.verifier.verifyRenewalInfo(try #require(last.signedRenewalInfo))
        #expect(renewal.autoRenewStatus == 1 && renewal.autoRenewProductId == Self.monthly.id)

        // 25 transactions: two pages of history, oldest first.
        let history = try await apple.transactionHistory(transactionID: id, environment: .sandbox)
        #expect(history.count == 25)
        #expect(try Self.verifier.verifyTransaction(history[0]).transactionId == id)
        let newest = try Self.verifier.verifyTransaction(history[24])
        let info = try await apple.transactionInfo(
            transactionID: try #require(newest.transactionId), environment: .sandbox)
        #expect(try Self.verifier.verifyTransaction(info).transactionId == newest.transactionId)

        let token = "1B2C3D4E-0000-4000-8000-000000000001"
        try await apple.setAppAccountToken(originalTransactionID: id, appAccountToken: token, environment: .sandbox)
        #expect(
            try Self.verifier.verifyTransaction(try store.signedTransaction(id)).appAccountToken == token.lowercased())

        let sent = try await apple.notificationHistory(
            start: Date(timeIntervalSince1970: Double(Self.start) / 1000),
            end: Date(timeIntervalSince1970: Double(store.clock.now + 1) / 1000), environment: .sandbox)
        #expect(sent.count == 25)  // SUBSCRIBED and 24 renewals, over two pages

        do {
            _ = try await apple.transactionInfo(transactionID: "999", environment: .sandbox)
            Issue.record("an unknown transaction was found")
        } catch {
            #expect(error.apiErrorCode == 4_040_010 && error.httpStatus == 404)
        }
        let stranger = try client(try PrivateKey.generate(.p256))
        do {
            _ = try await stranger.transactionInfo(transactionID: id, environment: .sandbox)
            Issue.record("a token signed by another key was accepted")
        } catch {
            #expect(error.code == .unauthorized && error.httpStatus == 401)
        }
    }
}
