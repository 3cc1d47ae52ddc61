import Clients
import Foundation
import GooglePlay
import HTTPClient
import Model
import RPC
import Testing
import Wire

@testable import VerifierService

/// The operator's actions at Google Play through the verifier's RPCs: each is sent to Play, the
/// purchase is read again and recorded with a store-action event naming the caller and the
/// reason; Play's refusals become the RPC errors that say what to fix, recording nothing.
@Suite("Google Play store actions", .serialized)
struct GoogleStoreActionTests {
    static let package = GoogleAdapterTests.package
    static let token = "tok-act.AO-J1Oz"

    /// The harness with `token` verified (in the ledger, acknowledged) and a client that calls
    /// as `support-1`.
    static func verified() async throws -> (GoogleAdapterTests.Harness, VerifierClient) {
        let harness = try await GoogleAdapterTests.Harness()
        harness.api.setSubscription(token, harness.purchase())
        _ = try await harness.adapter.verifyPurchase(
            VerifyGooglePurchaseRequest(
                accountID: "user-1", packageName: package, productID: "pro_monthly", purchaseToken: token,
                idempotencyKey: "v-1"))
        // The action is read after the verification, at a later store time.
        harness.clock.advance(seconds: 60)
        let router = RPCRouter()
        VerifierMethods.register(on: router, apple: nil, google: harness.adapter)
        let server = try RPCServer(configuration: RPCServerConfiguration(), router: router)
        let client = VerifierClient(
            InProcessTransport(server: server, caller: RPCCaller(identities: ["support-1"], peer: "test")))
        return (harness, client)
    }

    /// The newest event of the test purchase (the history lists the newest first).
    static func lastEvent(_ harness: GoogleAdapterTests.Harness) async throws -> LifecycleEvent? {
        try await harness.ledger.getHistory(GetHistoryRequest(key: harness.key(token))).events.first
    }

    static func error(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error
        } catch {
            return RPCError(.unknown, "\(error)")
        }
    }

    @Test("RevokeGooglePurchase revokes with the refund asked for and records REVOKE by the caller, with the reason")
    func revoke() async throws {
        let (harness, client) = try await Self.verified()
        let response = try await client.revokeGooglePurchase(
            RevokeGooglePurchaseRequest(
                purchaseToken: Self.token, packageName: Self.package, refund: .prorated,
                reason: "ticket 7: charged twice"))
        #expect(harness.api.calls.suffix(2) == ["revoke proratedRefund \(Self.token)", "get \(Self.token)"])
        #expect(response.subscription?.state == .revoked)
        #expect(response.detail == "revoked with a prorated refund")
        let event = try #require(try await Self.lastEvent(harness))
        #expect(event.kind == .storeAction && event.storeSubtype == "REVOKE")
        #expect(event.actor == "support-1" && event.reason == "ticket 7: charged twice")
        #expect(event.detail == "revoked with a prorated refund" && event.state == .revoked)
        await harness.stop()
    }

    @Test("RefundGoogleOrder refunds a renewal's order of the purchase only; another purchase's order is refused first")
    func refund() async throws {
        let (harness, client) = try await Self.verified()
        #expect(
            await Self.error {
                _ = try await client.refundGoogleOrder(
                    RefundGoogleOrderRequest(
                        packageName: Self.package, orderID: "GPA.9999-0000-0000-00000", purchaseToken: Self.token,
                        reason: "r"))
            }
                == RPCError(
                    .invalidArgument,
                    "order GPA.9999-0000-0000-00000 is not an order of this purchase token (its orders are "
                        + "GPA.1234-5678-9012-34567 and their renewals ..N)"))
        let response = try await client.refundGoogleOrder(
            RefundGoogleOrderRequest(
                packageName: Self.package, orderID: "GPA.1234-5678-9012-34567..2", purchaseToken: Self.token,
                revoke: false, reason: "goodwill"))
        #expect(
            harness.api.calls.suffix(2) == ["refund GPA.1234-5678-9012-34567..2 revoke=false", "get \(Self.token)"])
        #expect(response.subscription?.state == .active)
        let event = try #require(try await Self.lastEvent(harness))
        #expect(event.storeSubtype == "REFUND_ORDER" && event.actor == "support-1" && event.reason == "goodwill")
        #expect(event.detail == "order GPA.1234-5678-9012-34567..2 refunded; access stays")
        await harness.stop()
    }

    @Test("DeferGoogleRenewal moves the recorded expiry by the days asked, from the expiry Play reads now")
    func deferRenewal() async throws {
        let (harness, client) = try await Self.verified()
        let before = try #require(
            try await harness.ledger.subscription(harness.key(Self.token))?.expiresTimeMilliseconds)
        let response = try await client.deferGoogleRenewal(
            DeferGoogleRenewalRequest(
                purchaseToken: Self.token, packageName: Self.package, productID: "pro_monthly", days: 7,
                reason: "outage compensation"))
        let after = before + 7 * 86_400_000
        #expect(
            harness.api.calls.suffix(3) == [
                "get \(Self.token)", "defer pro_monthly \(Self.token) \(before)->\(after)", "get \(Self.token)",
            ])
        #expect(response.subscription?.expiresTimeMilliseconds == after)
        let event = try #require(try await Self.lastEvent(harness))
        #expect(event.storeSubtype == "DEFER_RENEWAL" && event.reason == "outage compensation")
        #expect(
            event.detail
                == "renewal deferred from \(EpochTime.iso8601(before)) to \(EpochTime.iso8601(after))")
        await harness.stop()
    }

    @Test("a deferral outside 1 to 365 days, or with both or neither of days and desired_expiry_ms, is refused first")
    func deferralBounds() async throws {
        let (harness, client) = try await Self.verified()
        let calls = harness.api.calls.count
        func deferral(days: Int32? = nil, desired: Int64? = nil) async -> RPCError? {
            await Self.error {
                _ = try await client.deferGoogleRenewal(
                    DeferGoogleRenewalRequest(
                        purchaseToken: Self.token, packageName: Self.package, productID: "pro_monthly", days: days,
                        desiredExpiryMilliseconds: desired, reason: "r"))
            }
        }
        #expect(await deferral(days: 366) == RPCError(.invalidArgument, "days must be 1 to 365, got 366"))
        #expect(await deferral() == RPCError(.invalidArgument, "give exactly one of days and desired_expiry_ms"))
        #expect(
            await deferral(days: 1, desired: 1)
                == RPCError(.invalidArgument, "give exactly one of days and desired_expiry_ms"))
        #expect(await deferral(desired: 1)?.code == .invalidArgument)
        #expect(harness.api.calls.count == calls + 1)  // only the read the last one needed
        await harness.stop()
    }

    @Test(
        "CancelGoogleSubscription turns renewal off: the state read after is CANCELLED with access to the period's end")
    func cancel() async throws {
        let (harness, client) = try await Self.verified()
        let response = try await client.cancelGoogleSubscription(
            CancelGoogleSubscriptionRequest(
                purchaseToken: Self.token, packageName: Self.package, reason: "asked by mail"))
        #expect(harness.api.calls.suffix(2) == ["cancel \(Self.token)", "get \(Self.token)"])
        #expect(response.subscription?.state == .cancelled && response.subscription?.autoRenew == false)
        let event = try #require(try await Self.lastEvent(harness))
        #expect(event.storeSubtype == "CANCEL" && event.actor == "support-1" && event.reason == "asked by mail")
        await harness.stop()
    }

    @Test(
        "Play's refusals are NOT_FOUND, FAILED_PRECONDITION and RESOURCE_EXHAUSTED naming Play's answer and what to do; nothing is recorded"
    )
    func refusals() async throws {
        let (harness, client) = try await Self.verified()
        let events = try await harness.ledger.getHistory(GetHistoryRequest(key: harness.key(Self.token))).events.count
        func refund() async -> RPCError? {
            await Self.error {
                _ = try await client.refundGoogleOrder(
                    RefundGoogleOrderRequest(
                        packageName: Self.package, orderID: "GPA.1234-5678-9012-34567", purchaseToken: Self.token,
                        revoke: true, reason: "r"))
            }
        }
        var refused = GooglePlayAPIError(
            .invalidRequest, "orders.refund: The order has already been refunded.", httpStatus: 400)
        refused.googleStatus = "FAILED_PRECONDITION"
        harness.api.failNextAction(refused)
        #expect(
            await refund()
                == RPCError(
                    .failedPrecondition,
                    "Google Play refused REFUND_ORDER (HTTP 400 FAILED_PRECONDITION: orders.refund: The order has "
                        + "already been refunded.); an order already refunded, or older than 3 years, cannot be refunded"
                ))
        var limited = GooglePlayAPIError(.rateLimited, "orders.refund: Quota exceeded.", httpStatus: 429)
        limited.googleStatus = "RESOURCE_EXHAUSTED"
        limited.retryAfter = .seconds(30)
        harness.api.failNextAction(limited)
        #expect(
            await refund()
                == RPCError(
                    .resourceExhausted,
                    "Google Play refused REFUND_ORDER (HTTP 429 RESOURCE_EXHAUSTED: orders.refund: Quota exceeded.); "
                        + "Play's quota for this call is used up, try again after 30 s"))
        harness.api.failNextAction(GooglePlayAPIError(.notFound, "orders.refund: not found", httpStatus: 404))
        #expect(
            await refund()
                == RPCError(
                    .notFound,
                    "Google Play refused REFUND_ORDER (HTTP 404: orders.refund: not found); check the purchase token "
                        + "and the order id (GPA.…, a renewal's GPA.…..N)"))
        #expect(
            try await harness.ledger.getHistory(GetHistoryRequest(key: harness.key(Self.token))).events.count == events)
        await #expect(throws: RPCError(.notFound, "the ledger has no Google purchase tok-unknown…; verify it first")) {
            _ = try await client.cancelGoogleSubscription(
                CancelGoogleSubscriptionRequest(purchaseToken: "tok-unknown", packageName: Self.package, reason: "r"))
        }
        #expect(
            await Self.error {
                _ = try await client.revokeGooglePurchase(
                    RevokeGooglePurchaseRequest(purchaseToken: Self.token, packageName: Self.package, reason: "r"))
            } == RPCError(.invalidArgument, "refund must be FULL or PRORATED"))
        #expect(
            await Self.error {
                _ = try await client.cancelGoogleSubscription(
                    CancelGoogleSubscriptionRequest(purchaseToken: Self.token, packageName: Self.package))
            } == RPCError(.invalidArgument, "reason must be 1 to 512 bytes"))
        await harness.stop()
    }
}
