import AppStore
import Crypto
import Foundation
import HTTP
import Observability
import StoreSimKit
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The simulated App Store where Apple is hard on a backend: renewals charged before the period
/// ends, refunds and consumption requests about older transactions, one-time purchases, offers,
/// renewal-date extensions and paged history. Every payload is verified and decoded the way the
/// verifier does it.
@Suite("Store simulator: App Store, as strict as Apple")
struct AppleSimStrictnessTests {
    static let start = AppleSimStoreTests.start  // 2026-01-01T00:00:00Z
    static let day = AppleSimStoreTests.day
    static let february: Int64 = 1_769_904_000_000  // 2026-02-01
    static let march: Int64 = 1_772_323_200_000  // 2026-03-01
    static let april: Int64 = 1_775_001_600_000  // 2026-04-01
    static let monthly = AppleSimStoreTests.monthly
    static let coins = AppleSimOneTimeProduct(id: "com.example.coins.100", kind: .consumable, price: 990)
    static let lifetime = AppleSimOneTimeProduct(id: "com.example.lifetime", kind: .nonConsumable, price: 49_990)
    static let pass = AppleSimOneTimeProduct(id: "com.example.pass.30d", kind: .nonRenewingSubscription, price: 4_990)
    static let verifier = AppleSimStoreTests.verifier

    static func store(lead: Int64 = day, seed: UInt64 = 7, grace: Int? = 16) -> AppleSimStore {
        AppleSimStore(
            configuration: AppleSimConfiguration(
                bundleID: "com.example.app", appAppleID: 1_234_567_890, gracePeriodDays: grace,
                products: [monthly, AppleSimStoreTests.premium], oneTimeProducts: [coins, lifetime, pass],
                renewalLeadMilliseconds: lead, renewalSeed: seed),
            clock: SimClock(startMilliseconds: start), chain: AppleSimStoreTests.chain)
    }

    /// A notification as the verifier reads it, with the transaction the simulator says it names.
    struct Event {
        let type: String
        let subtype: String?
        let signedDate: Int64?
        let status: Int?
        let consumptionRequestReason: String?
        let transaction: AppleTransaction
        let renewal: AppleRenewalInfo?
        let named: String

        var kind: String { subtype.map { "\(type)/\($0)" } ?? type }
    }

    static func drain(_ store: AppleSimStore) throws -> [Event] {
        try store.takeOutbox().map { sent in
            let notification = try verifier.verifyNotification(sent.signedPayload)
            let data = try #require(notification.data)
            let transaction = try verifier.verifyTransaction(try #require(data.signedTransactionInfo))
            #expect(transaction.transactionId == sent.transactionID)
            return Event(
                type: notification.notificationType.rawValue, subtype: notification.subtype?.rawValue,
                signedDate: notification.signedDate, status: data.status,
                consumptionRequestReason: data.consumptionRequestReason, transaction: transaction,
                renewal: try data.signedRenewalInfo.map { try verifier.verifyRenewalInfo($0) },
                named: sent.transactionID)
        }
    }

    static func transactions(_ store: AppleSimStore, _ id: String) throws -> [AppleTransaction] {
        try store.history(id).map { try verifier.verifyTransaction($0) }
    }

    // MARK: Renewals

    @Test(
        "a renewal is charged within the lead window before the old expiry: signed then, its purchaseDate the old expiresDate"
    )
    func earlyRenewal() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        _ = try Self.drain(store)
        // One millisecond before the old period ends the next one is already charged.
        store.advance(by: Self.february - 1 - Self.start)
        let renewed = try Self.drain(store)
        #expect(renewed.map(\.kind) == ["DID_RENEW"])
        let renewal = try #require(renewed.first)
        let charged = try #require(renewal.signedDate)
        #expect(charged >= Self.february - Self.day && charged < Self.february)
        #expect(renewal.transaction.purchaseDate == Self.february && renewal.transaction.expiresDate == Self.march)
        #expect(renewal.transaction.signedDate == charged && renewal.renewal?.signedDate == charged)
        #expect(renewal.transaction.transactionReason == "RENEWAL" && renewal.transaction.originalTransactionId == id)
        #expect(renewal.status == 1 && renewal.renewal?.renewalDate == Self.march)
        // The first period still runs and still says so; the newest transaction has not started.
        let first = try Self.verifier.verifyTransaction(try store.signedTransaction(id))
        #expect(first.expiresDate == Self.february && first.revocationDate == nil)
        #expect(try Self.transactions(store, id).map(\.purchaseDate) == [Self.start, Self.february])
        #expect(store.clock.now < Self.february)
    }

    @Test(
        "the charge moments are the seed's: the same seed gives the same ones, another seed others, lead 0 the expiry")
    func seededChargeMoments() throws {
        func renewalDates(lead: Int64, seed: UInt64) throws -> [Int64?] {
            let store = Self.store(lead: lead, seed: seed)
            _ = try store.buy(productID: Self.monthly.id)
            store.advance(by: 100 * Self.day)
            return try Self.drain(store).filter { $0.type == "DID_RENEW" }.map(\.signedDate)
        }
        let first = try renewalDates(lead: Self.day, seed: 42)
        #expect(first.count == 3)
        #expect(try renewalDates(lead: Self.day, seed: 42) == first)
        #expect(try renewalDates(lead: Self.day, seed: 43) != first)
        #expect(try renewalDates(lead: 0, seed: 42) == [Self.february, Self.march, Self.april])
        let hour: Int64 = 3_600_000
        let withinAnHour = try renewalDates(lead: hour, seed: 42)
        for (charged, expiry) in zip(withinAnHour, [Self.february, Self.march, Self.april]) {
            #expect(charged.map { $0 >= expiry - hour && $0 < expiry } == true)
        }
    }

    @Test(
        "a charge that fails in the window shows at the old expiry: DID_FAIL_TO_RENEW then, grace from the old expiry")
    func failedChargeShowsAtExpiry() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        try store.failPayment(id)
        _ = try Self.drain(store)
        store.advance(by: Self.february - 1 - Self.start)
        #expect(try Self.drain(store).isEmpty && store.status(of: id) == 1)
        store.advance(by: 1)
        let failed = try #require(try Self.drain(store).first)
        #expect(failed.kind == "DID_FAIL_TO_RENEW/GRACE_PERIOD" && failed.signedDate == Self.february)
        #expect(failed.status == 4 && failed.transaction.expiresDate == Self.february)
        #expect(failed.renewal?.isInBillingRetryPeriod == true && failed.renewal?.expirationIntent == 2)
        #expect(failed.renewal?.gracePeriodExpiresDate == Self.february + 16 * Self.day)
        #expect(failed.renewal?.renewalDate == nil)

        // Fixed between the failed charge and the expiry: charged at once, for the period it was for.
        let fixing = Self.store()
        let other = try fixing.buy(productID: Self.monthly.id)
        try fixing.failPayment(other)
        fixing.advance(by: Self.february - 1 - Self.start)
        try fixing.recover(other)
        let renewed = try Self.drain(fixing)
        #expect(renewed.map(\.kind) == ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"])
        #expect(renewed[1].signedDate == Self.february - 1 && renewed[1].transaction.purchaseDate == Self.february)
        #expect(renewed[1].transaction.expiresDate == Self.march && renewed[1].status == 1)
    }

    // MARK: Refunds and consumption requests

    @Test(
        "a refund of the first of three transactions names that transaction, data.status stays 1; its reversal, a consumption request and a declined refund name theirs"
    )
    func refundOfAnOlderTransaction() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        store.advance(by: 60 * Self.day)  // 2026-03-02: renewed for February and March
        _ = try Self.drain(store)
        let ids = try store.transactionIDs(of: id)
        #expect(ids.count == 3 && ids[0] == id)

        try store.refund(ids[0], reason: 1)
        let refund = try #require(try Self.drain(store).first)
        #expect(refund.kind == "REFUND" && refund.status == 1 && refund.named == ids[0])
        #expect(refund.transaction.transactionId == ids[0] && refund.transaction.expiresDate == Self.february)
        #expect(refund.transaction.revocationDate == store.clock.now && refund.transaction.revocationReason == 1)
        #expect(refund.renewal?.autoRenewStatus == 1)
        let history = try Self.transactions(store, id)
        #expect(history.map { $0.revocationDate != nil } == [true, false, false])
        #expect(try store.status(of: id) == 1)
        #expect(throws: SimError(.conflict, "\(ids[0]) is already revoked")) { try store.refund(ids[0]) }

        try store.reverseRefund(ids[0])
        try store.requestConsumption(ids[1], reason: "UNSATISFIED_WITH_PURCHASE")
        try store.declineRefund(ids[1])
        let events = try Self.drain(store)
        #expect(events.map(\.kind) == ["REFUND_REVERSED", "CONSUMPTION_REQUEST", "REFUND_DECLINED"])
        #expect(events.map(\.named) == [ids[0], ids[1], ids[1]] && events.allSatisfy { $0.status == 1 })
        #expect(events[0].transaction.revocationDate == nil && events[0].transaction.revocationReason == nil)
        #expect(events[1].consumptionRequestReason == "UNSATISFIED_WITH_PURCHASE")
        #expect(throws: SimError(.conflict, "\(ids[0]) is not refunded")) { try store.reverseRefund(ids[0]) }
        #expect(throws: SimError(.badRequest, "consumptionRequestReason \"BORED\" is not one Apple sends")) {
            try store.requestConsumption(ids[1], reason: "BORED")
        }

        // The newest one refunded revokes the subscription: status 5, and nothing renews.
        try store.refund(ids[2])
        let revoked = try #require(try Self.drain(store).first)
        #expect(revoked.kind == "REFUND" && revoked.status == 5 && revoked.named == ids[2])
        store.advance(by: 60 * Self.day)
        #expect(try Self.drain(store).isEmpty && store.transactionIDs(of: id).count == 3)
        try store.reverseRefund(ids[2])
        let back = try #require(try Self.drain(store).first)
        // The period it paid for ended meanwhile.
        #expect(back.kind == "REFUND_REVERSED" && back.status == 2)
    }

    @Test("a refund of the period still running after the next one was charged names it and leaves status 1")
    func refundInTheChargeWindow() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        store.advance(by: Self.february - 1 - Self.start)
        _ = try Self.drain(store)
        let ids = try store.transactionIDs(of: id)
        #expect(ids.count == 2)
        try store.refund(id)
        let refund = try #require(try Self.drain(store).first)
        #expect(refund.named == id && refund.status == 1 && refund.transaction.revocationDate == store.clock.now)
        #expect(try Self.transactions(store, id).map { $0.revocationDate != nil } == [true, false])
        store.advance(by: 40 * Self.day)
        #expect(try Self.drain(store).map(\.kind) == ["DID_RENEW"])
    }

    // MARK: One-time purchases

    @Test(
        "one-time purchases: one transaction each, originalTransactionId its own, no expiresDate; ONE_TIME_CHARGE without renewal info or status"
    )
    func oneTimePurchases() throws {
        let store = Self.store()
        let token = "6B29FC40-CA47-1067-B31D-00DD010662DA"
        let pass = try store.buy(productID: Self.pass.id, appAccountToken: token)
        let coins = try store.buy(productID: Self.coins.id)
        let lifetime = try store.buy(productID: Self.lifetime.id, familyShared: true)
        let bought = try Self.drain(store)
        #expect(bought.map(\.kind) == ["ONE_TIME_CHARGE", "ONE_TIME_CHARGE", "ONE_TIME_CHARGE"])
        #expect(bought.allSatisfy { $0.status == nil && $0.renewal == nil })
        #expect(
            bought.map(\.transaction.type) == ["Non-Renewing Subscription", "Consumable", "Non-Consumable"])
        for (event, id) in zip(bought, [pass, coins, lifetime]) {
            let transaction = event.transaction
            #expect(transaction.transactionId == id && transaction.originalTransactionId == id)
            #expect(transaction.expiresDate == nil && transaction.webOrderLineItemId == nil)
            #expect(transaction.subscriptionGroupIdentifier == nil && transaction.purchaseDate == Self.start)
            #expect(transaction.transactionReason == "PURCHASE" && transaction.storefront == "USA")
            #expect(transaction.currency == "USD")
        }
        #expect(bought.map(\.transaction.price) == [4_990, 990, 49_990])
        #expect(bought[0].transaction.appAccountToken == token.lowercased())
        #expect(bought[2].transaction.inAppOwnershipType == "FAMILY_SHARED")
        #expect(try store.transactionIDs(of: pass) == [pass] && store.status(of: pass) == nil)
        #expect(try store.history(pass).count == 1)

        try store.refund(coins)
        let more = try store.buy(productID: Self.coins.id)
        try store.requestConsumption(more)
        try store.revokeFamilySharing(lifetime)
        let later = try Self.drain(store)
        #expect(later.map(\.kind) == ["REFUND", "ONE_TIME_CHARGE", "CONSUMPTION_REQUEST", "REVOKE"])
        #expect(later[0].named == coins && later[0].transaction.revocationDate == store.clock.now)
        #expect(later[0].status == nil && later[3].transaction.revocationDate == store.clock.now)
        #expect(later[2].named == more && later[2].consumptionRequestReason == "UNINTENDED_PURCHASE")

        #expect(throws: SimError(.conflict, "Apple asks about consumption of consumables and subscriptions only")) {
            try store.requestConsumption(pass)
        }
        #expect(throws: SimError(.conflict, "\(pass) is a one-time purchase, not an auto-renewable subscription")) {
            try store.cancel(pass)
        }
        #expect(
            throws: SimError(.badRequest, "\(Self.coins.id) is a one-time product: subscription offers do not apply")
        ) {
            _ = try store.buy(productID: Self.coins.id, offer: .freeTrial())
        }
        #expect(
            throws: SimError(
                .badRequest, "Family Sharing covers non-consumables and subscriptions, not \(Self.coins.id)")
        ) {
            _ = try store.buy(productID: Self.coins.id, familyShared: true)
        }
    }

    // MARK: Offers

    @Test("a free trial: offerType 1, FREE_TRIAL, price 0, its own length; the renewal after it is plain")
    func freeTrial() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id, offer: .freeTrial(.days(7)))
        let bought = try #require(try Self.drain(store).first)
        #expect(bought.kind == "SUBSCRIBED/INITIAL_BUY")
        let trial = bought.transaction
        #expect(trial.offerType == 1 && trial.offerDiscountType == "FREE_TRIAL" && trial.offerIdentifier == nil)
        #expect(trial.price == 0 && trial.currency == "USD" && trial.expiresDate == Self.start + 7 * Self.day)
        #expect(bought.renewal?.offerType == nil && bought.renewal?.renewalPrice == Self.monthly.price)
        #expect(bought.renewal?.renewalDate == Self.start + 7 * Self.day && bought.renewal?.currency == "USD")
        #expect(throws: SimError(.conflict, "\(id) is in a free offer period")) {
            try store.extendRenewal(id, days: 5)
        }
        store.advance(by: 10 * Self.day)
        let renewed = try #require(try Self.drain(store).first)
        #expect(renewed.kind == "DID_RENEW")
        #expect(renewed.transaction.offerType == nil && renewed.transaction.offerDiscountType == nil)
        #expect(renewed.transaction.price == Self.monthly.price)
        #expect(renewed.transaction.purchaseDate == Self.start + 7 * Self.day)
        #expect(renewed.transaction.expiresDate == 1_770_508_800_000)  // 2026-02-08
    }

    @Test(
        "an offer code paid as you go covers its periods, the renewal info announcing it; a promotional offer redeemed later applies from the next renewal"
    )
    func offersOverSeveralPeriods() throws {
        let store = Self.store()
        let code = try AppleSimOffer(
            kind: .offerCode, discount: .payAsYouGo, identifier: "SPRING", period: .months(1), periods: 2,
            price: 4_990)
        let id = try store.buy(productID: Self.monthly.id, offer: code)
        store.advance(by: Self.march - 10 * Self.day - Self.start)  // renewed once, for February
        let events = try Self.drain(store)
        #expect(events.map(\.kind) == ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"])
        for event in events {
            #expect(event.transaction.offerType == 3 && event.transaction.offerIdentifier == "SPRING")
            #expect(event.transaction.offerDiscountType == "PAY_AS_YOU_GO" && event.transaction.price == 4_990)
        }
        #expect(events[0].renewal?.offerType == 3 && events[0].renewal?.offerIdentifier == "SPRING")
        #expect(events[0].renewal?.renewalPrice == 4_990)
        #expect(events[1].renewal?.offerType == nil && events[1].renewal?.renewalPrice == Self.monthly.price)

        let promotion = try AppleSimOffer(
            kind: .promotional, discount: .payUpFront, identifier: "STAY3", period: .months(3), price: 19_990)
        try store.redeemOffer(id, promotion)
        store.advance(by: 20 * Self.day)
        let later = try Self.drain(store)
        #expect(later.map(\.kind) == ["OFFER_REDEEMED", "DID_RENEW"])
        #expect(later[0].renewal?.offerType == 2 && later[0].renewal?.offerIdentifier == "STAY3")
        #expect(later[0].renewal?.offerDiscountType == "PAY_UP_FRONT" && later[0].renewal?.renewalPrice == 19_990)
        #expect(later[0].transaction.offerType == 3)  // the period in force, still the code's
        let promoted = later[1].transaction
        #expect(promoted.offerType == 2 && promoted.offerIdentifier == "STAY3" && promoted.price == 19_990)
        #expect(promoted.purchaseDate == Self.march && promoted.expiresDate == 1_780_272_000_000)  // 2026-06-01
        #expect(later[1].renewal?.offerType == nil)

        #expect(throws: SimError(.badRequest, "an introductory offer has no identifier")) {
            _ = try AppleSimOffer(kind: .introductory, discount: .freeTrial, identifier: "X", period: .days(7))
        }
        #expect(throws: SimError(.badRequest, "a free trial costs 0 and no price is negative")) {
            _ = try AppleSimOffer(kind: .introductory, discount: .freeTrial, period: .days(7), price: 990)
        }
        #expect(throws: SimError(.badRequest, "an active subscriber redeems promotional offers and offer codes only")) {
            try store.redeemOffer(id, .freeTrial())
        }
    }

    // MARK: Renewal-date extensions

    @Test("RENEWAL_EXTENDED moves the current expiresDate later, signed now; the renewal then starts at the new date")
    func renewalExtended() throws {
        let store = Self.store()
        let id = try store.buy(productID: Self.monthly.id)
        store.advance(by: 35 * Self.day)  // 2026-02-05, in the February period
        _ = try Self.drain(store)
        let extended = try store.extendRenewal(id, days: 10, reason: 3)
        let newEnd = Self.march + 10 * Self.day
        #expect(extended.effectiveDate == newEnd && extended.originalTransactionID == id)
        let event = try #require(try Self.drain(store).first)
        #expect(event.kind == "RENEWAL_EXTENDED" && event.signedDate == store.clock.now && event.status == 1)
        #expect(event.transaction.expiresDate == newEnd && event.transaction.purchaseDate == Self.february)
        #expect(event.transaction.webOrderLineItemId == extended.webOrderLineItemID)
        #expect(event.renewal?.renewalDate == newEnd)

        store.advance(by: newEnd - store.clock.now)
        let renewed = try #require(try Self.drain(store).first)
        #expect(renewed.kind == "DID_RENEW" && renewed.transaction.purchaseDate == newEnd)
        let charged = try #require(renewed.signedDate)
        #expect(charged >= newEnd - Self.day && charged < newEnd)

        try store.extendRenewal(id, days: 1)
        #expect(throws: SimError(.conflict, "\(id) was extended twice within 365 days already")) {
            try store.extendRenewal(id, days: 1)
        }
        let second = try store.transactionIDs(of: id)[1]
        #expect(throws: SimError(.notFound, "no original transaction \(second)")) {
            try store.extendRenewal(second, days: 1)
        }
        #expect(throws: SimError(.badRequest, "extendByDays is 1 to 90, got 91")) {
            try store.extendRenewal(id, days: 91)
        }
    }

    // MARK: The App Store Server API

    /// A store served over HTTP, with a token maker for raw calls and the verifier's client.
    struct Served {
        let store: AppleSimStore
        let server: HTTPServer
        let key: PrivateKey
        let client: AppStoreServerAPIClient

        init(store: AppleSimStore, historyPageSize: Int) throws {
            self.store = store
            key = try PrivateKey.generate(.p256)
            let api = AppleSimAPI(
                store: store,
                credentials: .init(
                    keyID: "SIMKEY1234", issuerID: "sim-issuer", publicKey: try PublicKey(pem: key.publicKeyPEM())),
                historyPageSize: historyPageSize)
            server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "storesim", sink: .capturing()))
            api.register(on: server)
            try server.start()
            var configuration = AppStoreServerAPIClient.Configuration(
                keyID: "SIMKEY1234", issuerID: "sim-issuer", bundleID: "com.example.app", privateKey: key)
            configuration.sandboxBaseURL = URL(string: "http://127.0.0.1:\(server.port)")!
            configuration.productionBaseURL = configuration.sandboxBaseURL
            configuration.maxAttempts = 1
            client = try AppStoreServerAPIClient(configuration: configuration)
        }

        /// A raw call with a valid bearer token: the status and the JSON object answered.
        func call(_ method: String, _ path: String, body: [String: Any]? = nil) async throws -> (Int, [String: Any]) {
            let now = Int64(Date().timeIntervalSince1970)
            let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "kid": "SIMKEY1234", "typ": "JWT"])
            let claims = try JSONSerialization.data(
                withJSONObject: [
                    "iss": "sim-issuer", "iat": now, "exp": now + 600, "aud": "appstoreconnect-v1",
                    "bid": "com.example.app",
                ] as [String: Any])
            let token = try CompactJWS.sign(
                header: [UInt8](header), payload: [UInt8](claims), key: key, algorithm: .es256)
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
            request.httpMethod = method
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            if let body { request.httpBody = try JSONSerialization.data(withJSONObject: body) }
            let (data, status) = try await loopbackExchange(request)
            let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
            return (status, object)
        }
    }

    @Test("history returns every transaction of the chain across pages, signed now with their revocation as it is now")
    func pagedHistory() async throws {
        let store = Self.store()
        let served = try Served(store: store, historyPageSize: 2)
        defer { served.server.stop() }
        let id = try store.buy(productID: Self.monthly.id)
        store.advance(by: 125 * Self.day)  // 2026-05-06: the purchase and four renewals
        let ids = try store.transactionIDs(of: id)
        #expect(ids.count == 5)
        try store.refund(ids[1])
        store.advance(by: Self.day)

        var pages: [[String]] = []
        var revision: String?
        repeat {
            let query = revision.map { "?revision=\($0)" } ?? ""
            let (status, page) = try await served.call("GET", "/inApps/v2/history/\(ids[3])\(query)")
            #expect(status == 200)
            pages.append(try #require(page["signedTransactions"] as? [String]))
            revision = (page["hasMore"] as? Bool ?? false) ? try #require(page["revision"] as? String) : nil
        } while revision != nil && pages.count < 10
        #expect(pages.map(\.count) == [2, 2, 1])

        let paged = try pages.flatMap { $0 }.map { try Self.verifier.verifyTransaction($0) }
        let history = try await served.client.transactionHistory(transactionID: id, environment: .sandbox)
        let decoded = try history.map { try Self.verifier.verifyTransaction($0) }
        #expect(decoded.map(\.transactionId) == ids && paged.map(\.transactionId) == ids)
        #expect(decoded.allSatisfy { $0.signedDate == store.clock.now && $0.originalTransactionId == id })
        #expect(decoded.map { $0.revocationDate != nil } == [false, true, false, false, false])
        #expect(decoded[1].revocationDate == store.clock.now - Self.day)

        let pass = try store.buy(productID: Self.pass.id)
        let info = try Self.verifier.verifyTransaction(
            try await served.client.transactionInfo(transactionID: pass, environment: .sandbox))
        #expect(info.type == "Non-Renewing Subscription" && info.expiresDate == nil)
        let statuses = try await served.client.allSubscriptionStatuses(transactionID: pass, environment: .sandbox)
        #expect(statuses.data.isEmpty)
    }

    @Test("Look Up Order ID: each transaction's order answers it signed now (status 0), any other id status 1")
    func orderLookup() async throws {
        let store = Self.store()
        let served = try Served(store: store, historyPageSize: 20)
        defer { served.server.stop() }
        let id = try store.buy(productID: Self.monthly.id)
        store.advance(by: 35 * Self.day)  // the purchase and one renewal
        let ids = try store.transactionIDs(of: id)
        let orders = try store.transactionPeriods(of: id).compactMap { $0["orderId"] as? String }
        #expect(orders == ids.map(AppleSimStore.orderID(of:)) && Set(orders).count == 2)
        #expect(orders.allSatisfy { $0.count == 10 && $0.allSatisfy { $0.isUppercase || $0.isNumber } })
        let (status, answer) = try await served.call("GET", "/inApps/v1/lookup/\(orders[1])")
        #expect(status == 200 && answer["status"] as? Int == 0)
        let signed = try #require(answer["signedTransactions"] as? [String])
        #expect(try signed.map { try Self.verifier.verifyTransaction($0).transactionId } == [ids[1]])
        let (_, unknown) = try await served.call("GET", "/inApps/v1/lookup/MK5TTTVWJH")
        #expect(unknown["status"] as? Int == 1 && unknown["signedTransactions"] == nil)
        #expect(try await served.client.lookUpOrderID(orders[0]).count == 1)
        #expect(try await served.client.lookUpOrderID("MK5TTTVWJH").isEmpty)
        var bare = URLRequest(url: URL(string: "http://127.0.0.1:\(served.server.port)/inApps/v1/lookup/\(orders[0])")!)
        bare.httpMethod = "GET"
        #expect(try await loopbackExchange(bare).1 == 401)
    }

    @Test("Extend a Subscription Renewal Date over HTTP: the new date, then Apple's error codes for refusals")
    func extendEndpoint() async throws {
        let store = Self.store()
        let served = try Served(store: store, historyPageSize: 20)
        defer { served.server.stop() }
        let id = try store.buy(productID: Self.monthly.id)
        let shared = try store.buy(productID: Self.monthly.id, familyShared: true)
        store.advance(by: 3 * Self.day)
        let body: [String: Any] = ["extendByDays": 7, "extendReasonCode": 1, "requestIdentifier": "outage-1"]
        let (status, answer) = try await served.call("PUT", "/inApps/v1/subscriptions/extend/\(id)", body: body)
        #expect(status == 200 && answer["success"] as? Bool == true && answer["originalTransactionId"] as? String == id)
        #expect((answer["effectiveDate"] as? NSNumber)?.int64Value == Self.february + 7 * Self.day)
        #expect(
            try Self.drain(store).map(\.kind) == [
                "SUBSCRIBED/INITIAL_BUY", "SUBSCRIBED/INITIAL_BUY", "RENEWAL_EXTENDED",
            ])

        func errorCode(_ id: String, _ body: [String: Any]) async throws -> (Int, Int?) {
            let (status, answer) = try await served.call("PUT", "/inApps/v1/subscriptions/extend/\(id)", body: body)
            return (status, (answer["errorCode"] as? NSNumber)?.intValue)
        }
        var tooLong = body
        tooLong["extendByDays"] = 91
        #expect(try await errorCode(id, tooLong) == (400, 4_000_009))
        #expect(try await errorCode(shared, body) == (403, 4_030_007))
        #expect(try await errorCode("2000000000000999", body) == (404, 4_040_005))
        // The same requestIdentifier again answers the first extension and extends nothing more.
        let (_, replayed) = try await served.call("PUT", "/inApps/v1/subscriptions/extend/\(id)", body: body)
        #expect((replayed["effectiveDate"] as? NSNumber)?.int64Value == Self.february + 7 * Self.day)
        var second = body
        second["requestIdentifier"] = "outage-2"
        _ = try await errorCode(id, second)
        var third = body
        third["requestIdentifier"] = "outage-3"
        #expect(try await errorCode(id, third) == (403, 4_030_005))
    }

    // MARK: The control surface

    @Test("the control surface buys one-time products and offers, refunds by transaction id, extends and lists a chain")
    func controlSurface() async throws {
        let clock = SimClock(startMilliseconds: Self.start)
        let apple = AppleSimStore(
            configuration: Self.store().configuration, clock: clock, chain: AppleSimStoreTests.chain)
        let google = GoogleSimStore(
            configuration: GoogleSimConfiguration(
                packageName: "com.example.app",
                products: [GoogleSimProduct(id: "pro_sub", basePlanID: "monthly", period: .months(1))]),
            clock: clock)
        let googleAPI = GoogleSimAPI(
            store: google,
            identity: .init(
                serviceAccountEmail: "verifier@storesim.iam.gserviceaccount.com",
                serviceAccountKey: try PublicKey(pem: try TestRSAKeys.key(0).publicKeyPEM()),
                tokenURL: "http://127.0.0.1:1/token", pushServiceAccount: "push@storesim.iam.gserviceaccount.com",
                pushAudience: "https://verifier.example.com/google/rtdn", pushKey: try TestRSAKeys.key(1),
                pushKeyID: "push-1"))
        let simulator = StoreSimulator(
            clock: clock, apple: apple, appleFaults: APIFaults(), appleDelivery: NotificationDelivery(url: nil),
            googleAPI: googleAPI, googleDelivery: NotificationDelivery(url: nil))
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "storesim", sink: .capturing()))
        simulator.registerControl(on: server)
        try server.start()
        defer { server.stop() }
        func post(_ path: String, _ body: [String: Any]) async throws -> (Int, [String: Any]) {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/control/\(path)")!)
            request.httpMethod = "POST"
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            let (data, status) = try await loopbackExchange(request)
            let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
            return (status, object)
        }

        let (bought, purchase) = try await post(
            "apple/buy",
            [
                "productId": Self.monthly.id,
                "offer": ["type": 1, "discountType": "FREE_TRIAL", "period": "14d"] as [String: Any],
            ])
        let id = try #require(purchase["originalTransactionId"] as? String)
        #expect(bought == 200 && purchase["transactionId"] as? String == id)
        let (_, coins) = try await post("apple/buy", ["productId": Self.coins.id])
        let coinsID = try #require(coins["transactionId"] as? String)
        #expect(coins["originalTransactionId"] as? String == coinsID)
        #expect(try await post("clock/advance", ["by": "+40d"]).0 == 200)
        let (_, chain) = try await post("apple/transactions", ["transactionId": id])
        let ids = try #require(chain["transactionIds"] as? [String])
        #expect(ids.count == 2 && ids[0] == id && chain["status"] as? Int == 1)
        #expect(try await post("apple/refund", ["transactionId": id, "reason": 1]).0 == 200)
        // Each transaction's period and, once refunded, its revocation.
        let listed = try #require(
            try await post("apple/transactions", ["transactionId": id]).1["transactions"] as? [[String: Any]])
        #expect(listed.map { $0["transactionId"] as? String } == ids)
        #expect(
            listed.map { ($0["purchaseDate"] as? NSNumber)?.int64Value }
                == [Self.start, Self.start + 14 * Self.day])
        #expect((listed[0]["expiresDate"] as? NSNumber)?.int64Value == Self.start + 14 * Self.day)
        #expect(
            listed.map { ($0["revocationDate"] as? NSNumber)?.int64Value } == [Self.start + 40 * Self.day, nil])
        #expect(try await post("apple/consumption-request", ["transactionId": coinsID]).0 == 200)
        let (extendedStatus, extended) = try await post("apple/extend-renewal", ["transactionId": id, "days": 3])
        #expect(extendedStatus == 200 && extended["effectiveDate"] as? NSNumber != nil)
        #expect(try await post("apple/extend-renewal", ["transactionId": ids[1], "days": 3]).0 == 404)
        let (badOffer, _) = try await post(
            "apple/redeem-offer",
            [
                "transactionId": id,
                "offer": ["type": 2, "discountType": "PAY_UP_FRONT", "period": "3m"] as [String: Any],
            ])
        #expect(badOffer == 400)  // a promotional offer without its identifier

        let sent = apple.sentNotifications
        #expect(
            sent.map(\.type) == [
                "SUBSCRIBED", "ONE_TIME_CHARGE", "DID_RENEW", "REFUND", "CONSUMPTION_REQUEST", "RENEWAL_EXTENDED",
            ])
        #expect(sent[3].transactionID == id && sent[4].transactionID == coinsID)
        let trial = try Self.verifier.verifyTransaction(try apple.signedTransaction(id))
        #expect(trial.offerType == 1 && trial.expiresDate == Self.start + 14 * Self.day)
        #expect(trial.revocationReason == 1)

        // With no URL nothing was delivered: take-undelivered hands over each notification's
        // body as it would be posted, in the order they were made, once.
        let (tookStatus, took) = try await post("apple/take-undelivered", [:])
        let items = try #require(took["notifications"] as? [[String: Any]])
        #expect(tookStatus == 200 && items.count == sent.count)
        #expect(items.allSatisfy { ($0["body"] as? String)?.hasPrefix(#"{"signedPayload":"#) == true })
        let again = try await post("apple/take-undelivered", [:]).1["notifications"] as? [[String: Any]]
        #expect(again?.isEmpty == true)
    }
}
