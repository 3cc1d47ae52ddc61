import Clients
import Foundation
import Model
import RPC
import Testing
import Wire

@testable import VerifierService

/// `RefreshSubscription` with a reason: an operator's refresh, in the subscription's audit trail
/// as a `REFRESH` store action naming the caller and the reason, and whether the store's answer
/// changed the recorded state. Without one, an app's refresh, recorded as before.
@Suite("RefreshSubscription: an operator's refresh is audited", .serialized)
struct RefreshAuditTests {
    /// The caller's identity as the in-process transport names it.
    static let actor = "address in-process"

    /// The audit event an operator's refresh records, the rest taken from `recorded` (set by the
    /// ledger, or the store's data).
    static func expected(_ recorded: LifecycleEvent, reason: String, detail: String) -> LifecycleEvent {
        var event = recorded
        event.kind = .storeAction
        event.storeType = "API"
        event.storeSubtype = "REFRESH"
        event.actor = actor
        event.reason = reason
        event.detail = detail
        return event
    }

    @Test("App Store: the first refresh with a reason says the state is the first one; again, that it is unchanged")
    func apple() async throws {
        let harness = try await AppleStoreOperationsTests.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        let key = AppleStoreOperationsTests.key
        let first = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key, reason: "ticket 12"))
        #expect(first.changed && first.subscription?.state == .active)
        var event = try #require(try await harness.history(key).first)
        #expect(
            event
                == Self.expected(
                    event, reason: "ticket 12",
                    detail: "the store's answer is the first state the ledger holds (active)"))
        #expect(event.kind == .storeAction && event.rawTransaction != nil)
        let again = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key, reason: "ticket 13"))
        #expect(!again.changed)
        event = try #require(try await harness.history(key).first)
        #expect(
            event
                == Self.expected(
                    event, reason: "ticket 13", detail: "the store's answer left the recorded state unchanged (active)")
        )
        // An app's refresh: as before, a state read with no caller named.
        _ = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key))
        event = try #require(try await harness.history(key).first)
        #expect(event.kind == .stateRefreshed && event.storeSubtype == nil)
        #expect(event.actor == nil && event.reason == nil && event.detail == "RefreshSubscription")
    }

    /// A Google purchase `token` of `user-r` verified (recorded, linked, acknowledged), and the
    /// verifier's client.
    static func verifiedGoogle(_ token: String) async throws -> (
        GoogleAdapterTests.Harness, VerifierClient, SubscriptionKey
    ) {
        let harness = try await GoogleAdapterTests.Harness()
        harness.api.setSubscription(token, harness.purchase())
        let verifier = try verifierClient(google: harness.adapter)
        _ = try await verifier.verifyGooglePurchase(
            .init(
                accountID: "user-r", packageName: GoogleAdapterTests.package, productID: "pro_monthly",
                purchaseToken: token, idempotencyKey: "g-\(token)"))
        return (harness, verifier, harness.key(token))
    }

    @Test("Google Play: a refresh with a reason names the caller, the reason and the change the store's answer made")
    func google() async throws {
        let (harness, verifier, key) = try await Self.verifiedGoogle("tok-r")
        let unchanged = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key, reason: "case 1"))
        #expect(!unchanged.changed)
        var event = try #require(try await harness.ledger.getHistory(GetHistoryRequest(key: key)).events.first)
        #expect(
            event
                == Self.expected(
                    event, reason: "case 1", detail: "the store's answer left the recorded state unchanged (active)"))
        #expect(event.accountID == "user-r" && event.state == .active)
        // Play now reads it expired: the refresh records the change, and says so.
        harness.api.setSubscription(
            "tok-r", harness.purchase(state: "SUBSCRIPTION_STATE_EXPIRED", acknowledged: true, days: -1))
        let changed = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key, reason: "case 2"))
        #expect(changed.changed && changed.subscription?.state == .expired)
        event = try #require(try await harness.ledger.getHistory(GetHistoryRequest(key: key)).events.first)
        #expect(
            event
                == Self.expected(
                    event, reason: "case 2", detail: "the store's answer changed the recorded state (active → expired)")
        )
        #expect(event.state == .expired)
        await harness.stop()
    }

    @Test(
        "Google Play: an operator's refresh of a linked purchase Play still waits to see acknowledged acknowledges it; an app's refresh does not"
    )
    func refreshAcknowledges() async throws {
        let harness = try await GoogleAdapterTests.Harness()
        harness.api.setSubscription("tok-a", harness.purchase())
        let verifier = try verifierClient(google: harness.adapter)
        // The verification's acknowledgement fails: the purchase stays owed.
        harness.api.setFailAcknowledgements(true)
        _ = try await verifier.verifyGooglePurchase(
            .init(
                accountID: "user-a", packageName: GoogleAdapterTests.package, productID: "pro_monthly",
                purchaseToken: "tok-a", idempotencyKey: "g-tok-a"))
        harness.api.setFailAcknowledgements(false)
        let key = harness.key("tok-a")
        let acknowledgements = { harness.api.calls.filter { $0 == "acknowledge tok-a" }.count }
        #expect(acknowledgements() == 1)
        let app = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key))
        #expect(app.subscription?.acknowledged == false && acknowledgements() == 1)
        let asked = try await verifier.refreshSubscription(
            RefreshSubscriptionRequest(key: key, reason: "acknowledgement owed"))
        #expect(asked.subscription?.acknowledged == true)
        #expect(acknowledgements() == 2)
        #expect(
            try await harness.ledger.getSubscription(GetSubscriptionRequest(key: key)).subscription?.acknowledged
                == true)
        await harness.stop()
    }

    @Test("a reason is at most 512 bytes: the longest is taken, one byte more is refused")
    func reasonLimits() async throws {
        let (harness, verifier, key) = try await Self.verifiedGoogle("tok-l")
        let longest = String(repeating: "r", count: 512)
        _ = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key, reason: longest))
        #expect(try await harness.ledger.getHistory(GetHistoryRequest(key: key)).events.first?.reason == longest)
        await #expect(throws: RPCError(.invalidArgument, "reason must be 1 to 512 bytes")) {
            _ = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: key, reason: longest + "r"))
        }
        await harness.stop()
    }
}
