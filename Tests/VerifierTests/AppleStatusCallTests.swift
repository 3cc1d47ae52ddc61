import AppStore
import Clients
import Foundation
import Model
import Testing
import Wire

@testable import VerifierService

/// The rule that decides whether an App Store notification's own signed data is recorded as the
/// subscription's state, or the App Store Server API is asked first: the table of the pure rule,
/// then each branch through the ingress, counting the calls the fake App Store answers.
@Suite("Apple status call rule")
struct AppleStatusCallTests {
    static let signed: Int64 = 1_790_000_000_000

    static func transaction(
        id: String = "2000000009", purchase: Int64 = signed - 86_400_000, type: String = "Auto-Renewable Subscription"
    ) -> AppleTransaction {
        var transaction = AppleTransaction()
        transaction.transactionId = id
        transaction.originalTransactionId = "2000000001"
        transaction.productId = "com.example.monthly"
        transaction.purchaseDate = purchase
        transaction.expiresDate = purchase + 30 * 86_400_000
        transaction.type = type
        transaction.environment = "Sandbox"
        transaction.signedDate = signed
        return transaction
    }

    static func renewal(original: String = "2000000001") -> AppleRenewalInfo {
        var renewal = AppleRenewalInfo()
        renewal.originalTransactionId = original
        renewal.productId = "com.example.monthly"
        renewal.autoRenewProductId = "com.example.monthly"
        renewal.autoRenewStatus = 1
        renewal.signedDate = signed
        return renewal
    }

    /// A state the ledger holds: of transaction `id` bought at `purchase`, signed at `time`.
    static func recorded(id: String, purchase: Int64, time: Int64) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001"),
            productID: "com.example.monthly", purchaseTimeMilliseconds: purchase, storeTimeMilliseconds: time,
            latestOrderID: id)
    }

    /// One row: what the notification carries, what the ledger holds, and the expected answer.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var type: AppleNotificationType = .didRenew
        var transaction = AppleStatusCallTests.transaction()
        var renewal: AppleRenewalInfo? = AppleStatusCallTests.renewal()
        var status: Int? = 1
        var notificationSignedDate: Int64? = AppleStatusCallTests.signed
        var recorded: Subscription?
        var expected: AppleStatusCall.Reason?
        var testDescription: String { name }
    }

    static let older = signed - 30 * 86_400_000
    static let rows: [Row] = [
        Row(name: "DID_RENEW with renewal info and status, nothing recorded: no call"),
        Row(
            name: "DID_RENEW, the ledger holding the previous transaction signed earlier: no call",
            recorded: recorded(id: "2000000008", purchase: older, time: signed - 1)),
        Row(
            name: "DID_CHANGE_RENEWAL_STATUS, the ledger holding the same transaction signed earlier: no call",
            type: .didChangeRenewalStatus, recorded: recorded(id: "2000000009", purchase: signed - 86_400_000, time: 0)),
        Row(name: "SUBSCRIBED: no call", type: .subscribed),
        Row(name: "DID_FAIL_TO_RENEW in grace: no call", type: .didFailToRenew, status: 4),
        Row(name: "EXPIRED: no call", type: .expired, status: 2),
        Row(name: "GRACE_PERIOD_EXPIRED: no call", type: .gracePeriodExpired, status: 2),
        Row(name: "DID_CHANGE_RENEWAL_PREF: no call", type: .didChangeRenewalPref),
        Row(name: "OFFER_REDEEMED: no call", type: .offerRedeemed),
        Row(name: "PRICE_INCREASE: no call", type: .priceIncrease),
        Row(name: "RENEWAL_EXTENDED: no call", type: .renewalExtended),
        Row(name: "REFUND: call", type: .refund, status: 5, expected: .typeProvesLess),
        Row(name: "REFUND_DECLINED: call", type: .refundDeclined, expected: .typeProvesLess),
        Row(name: "REFUND_REVERSED: call", type: .refundReversed, expected: .typeProvesLess),
        Row(name: "CONSUMPTION_REQUEST: call", type: .consumptionRequest, expected: .typeProvesLess),
        Row(name: "REVOKE: call", type: .revoke, status: 5, expected: .typeProvesLess),
        Row(
            name: "a type Apple adds later: call", type: AppleNotificationType(rawValue: "NEW_TYPE"),
            expected: .typeProvesLess),
        Row(
            name: "a non-renewing subscription: call", transaction: transaction(type: "Non-Renewing Subscription"),
            renewal: nil, status: nil, expected: .notAutoRenewable),
        Row(
            name: "ONE_TIME_CHARGE of a non-consumable: call", type: .oneTimeCharge,
            transaction: transaction(type: "Non-Consumable"), renewal: nil, status: nil, expected: .notAutoRenewable),
        Row(name: "no renewal info: call", renewal: nil, expected: .noRenewalInfo),
        Row(name: "no status: call", status: nil, expected: .noStatus),
        Row(name: "a status Apple does not document: call", status: 7, expected: .noStatus),
        Row(name: "no signedDate: call", notificationSignedDate: nil, expected: .noSignedDate),
        Row(
            name: "renewal info of another chain: call", renewal: renewal(original: "2000000077"), expected: .otherChain
        ),
        Row(
            name: "the ledger holding a state signed later (a late delivery): call",
            recorded: recorded(id: "2000000009", purchase: signed - 86_400_000, time: signed + 1), expected: .notNewer),
        Row(
            name: "the ledger holding a state signed at the same instant: call",
            recorded: recorded(id: "2000000008", purchase: older, time: signed), expected: .notNewer),
        Row(
            name: "the ledger knowing a newer transaction of the chain, signed earlier: call",
            recorded: recorded(id: "2000000010", purchase: signed, time: signed - 1), expected: .newerTransaction),
    ]

    @Test("which notifications record their own data and which ask the API", arguments: rows)
    func rule(_ row: Row) throws {
        let candidate = try AppleLifecycle.subscription(
            transaction: row.transaction, renewalInfo: row.renewal, status: row.status,
            now: Date(timeIntervalSince1970: Double(Self.signed) / 1000),
            notificationSignedDate: row.notificationSignedDate)
        let reason = AppleStatusCall.reason(
            type: row.type, transaction: row.transaction, renewalInfo: row.renewal, status: row.status,
            notificationSignedDate: row.notificationSignedDate, candidate: candidate, recorded: row.recorded)
        #expect(reason == row.expected)
    }
}

/// Each branch of the rule through the ingress: the calls the fake App Store answered, and the
/// state the ledger keeps.
@Suite("Apple notifications without a status call", .serialized)
struct AppleStatusCallIngressTests {
    static let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")

    /// Delivers `payload`, waits until it is processed, and returns the API calls it made.
    static func deliver(_ harness: AppleAdapterHarness, _ payload: String) async throws -> [String] {
        let before = harness.api.calls.count
        #expect(try await harness.deliver(payload).0 == 200)
        await harness.adapter.processingIdle()
        return Array(harness.api.calls.dropFirst(before))
    }

    @Test("a DID_RENEW with renewal info and status records its own data and makes no call")
    func renewalWithoutCall() async throws {
        let harness = try await AppleAdapterHarness()
        // The API would answer something else: it is not asked.
        harness.api.set("2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 2))
        let first = try harness.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: harness.transaction(), renewal: harness.renewal())
        #expect(try await Self.deliver(harness, first).isEmpty)
        harness.clock.advance(seconds: 3600)
        let renewed = harness.transaction(id: "2000000010", expiresIn: 60)
        let payload = try harness.notification(
            uuid: "4e1a7c2b-0000-4000-8000-000000000001", type: "DID_RENEW", transaction: renewed,
            renewal: harness.renewal())
        #expect(try await Self.deliver(harness, payload).isEmpty)
        let subscription = try #require(try await harness.ledger.subscription(Self.key))
        #expect(subscription.state == .active && subscription.latestOrderID == "2000000010")
        #expect(subscription.expiresTimeMilliseconds == renewed["expiresDate"] as? Int64)
        #expect(subscription.storeTimeMilliseconds == harness.clock.milliseconds)
        let events = try await harness.history(Self.key)
        #expect(events.count == 2)
        let event = try #require(events.first { $0.notificationID == "4e1a7c2b-0000-4000-8000-000000000001" })
        #expect(event.kind == .renewed && event.detail == nil)
        #expect(harness.metric("notifications_processed_total") == 2)
        let processed = try await harness.ledger.listInbox(ListInboxRequest(status: .processed))
        #expect(processed.entries.count == 2)
        await harness.stop()
    }

    @Test("a REFUND asks the API once for the subscription's current state")
    func refundCalls() async throws {
        let harness = try await AppleAdapterHarness()
        let refund = harness.clock.milliseconds - 1000
        harness.api.set(
            "2000000001",
            .init(
                transaction: harness.transaction(revokedAt: refund), renewal: harness.renewal(autoRenew: 0), status: 5))
        let payload = try harness.notification(
            type: "REFUND", transaction: harness.transaction(revokedAt: refund), renewal: harness.renewal(autoRenew: 0),
            status: 5)
        #expect(try await Self.deliver(harness, payload) == ["allSubscriptionStatuses 2000000001"])
        let subscription = try #require(try await harness.ledger.subscription(Self.key))
        #expect(subscription.state == .revoked && subscription.revokedTimeMilliseconds == refund)
        await harness.stop()
    }

    @Test("a notification without renewal info, or without status, asks the API once", arguments: [false, true])
    func incompleteCalls(withRenewal: Bool) async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.set("2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
        let payload = try harness.notification(
            type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED", transaction: harness.transaction(),
            renewal: withRenewal ? harness.renewal() : nil, status: withRenewal ? nil : 1)
        #expect(try await Self.deliver(harness, payload) == ["allSubscriptionStatuses 2000000001"])
        #expect(try await harness.ledger.subscription(Self.key)?.state == .active)
        await harness.stop()
    }

    @Test("a non-renewing subscription's notification asks Get Transaction Info once")
    func nonRenewingCalls() async throws {
        let harness = try await AppleAdapterHarness()
        var transaction = harness.transaction()
        transaction["type"] = "Non-Renewing Subscription"
        transaction["expiresDate"] = nil
        harness.api.set("2000000001", .init(transaction: transaction, renewal: nil, status: nil))
        let payload = try harness.notification(
            type: "ONE_TIME_CHARGE", transaction: transaction, renewal: nil, status: nil)
        #expect(try await Self.deliver(harness, payload) == ["transactionInfo 2000000009"])
        await harness.stop()
    }

    @Test("a notification signed before the state the ledger holds (a late delivery) asks the API")
    func lateDeliveryCalls() async throws {
        let harness = try await AppleAdapterHarness()
        let late = try harness.notification(
            type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: harness.transaction(),
            renewal: harness.renewal(autoRenew: 0))
        harness.clock.advance(seconds: 60)
        let newer = try harness.notification(
            type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED", transaction: harness.transaction(),
            renewal: harness.renewal())
        #expect(try await Self.deliver(harness, newer).isEmpty)
        harness.api.set("2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
        #expect(try await Self.deliver(harness, late) == ["allSubscriptionStatuses 2000000001"])
        let subscription = try #require(try await harness.ledger.subscription(Self.key))
        #expect(subscription.state == .active && subscription.autoRenew)
        await harness.stop()
    }

    @Test("a notification about an older transaction than the ledger knows asks the API")
    func olderTransactionCalls() async throws {
        let harness = try await AppleAdapterHarness()
        // The ledger learns of the renewal 2000000010 first, at a time before the notification
        // about 2000000009 was signed (a refresh answered from data signed then).
        var renewed = harness.transaction(id: "2000000010", expiresIn: 60)
        renewed["purchaseDate"] = harness.clock.milliseconds
        let first = try harness.notification(type: "DID_RENEW", transaction: renewed, renewal: harness.renewal())
        #expect(try await Self.deliver(harness, first).isEmpty)
        harness.clock.advance(seconds: 60)
        harness.api.set("2000000001", .init(transaction: renewed, renewal: harness.renewal(), status: 1))
        let stale = try harness.notification(
            type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", transaction: harness.transaction(),
            renewal: harness.renewal())
        #expect(try await Self.deliver(harness, stale) == ["allSubscriptionStatuses 2000000001"])
        #expect(try await harness.ledger.subscription(Self.key)?.latestOrderID == "2000000010")
        await harness.stop()
    }
}
