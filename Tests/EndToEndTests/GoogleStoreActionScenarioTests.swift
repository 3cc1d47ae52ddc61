import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// The support operations at Google Play end to end: the verifier's RPC, Play's call on the
/// simulator, the state read after it in the ledger with the audit event (actor, reason), what
/// `CheckAccess` answers then, and each of Play's refusals as the documented RPC error that
/// changes nothing.
@Suite("End to end: support operations at Google Play")
struct GoogleStoreActionScenarioTests {
    static let package = "com.example.app"

    /// The error `body` ends in, or nil.
    static func refusal(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error
        } catch {
            return RPCError(.unknown, "\(error)")
        }
    }

    /// A new account with a Play subscription bought for it and verified, once it has access:
    /// the account, the purchase token and the first order id.
    static func subscribed(_ stack: StoreSimStack) async throws -> (String, String, String) {
        let account = "user-\(UUID().uuidString.prefix(8))"
        let bought = try await stack.control("google/buy", ["productId": "pro_sub", "obfuscatedAccountId": account])
        let token = try #require(bought["purchaseToken"] as? String)
        let order = try #require(bought["orderId"] as? String)
        _ = try await stack.verifyOnPlay(token, product: "pro_sub", account: account)
        _ = try await stack.eventually(account, "the purchase") { $0.allowed }
        return (account, token, order)
    }

    /// The store actions in `account`'s audit trail: subtype, actor, reason.
    static func actions(_ stack: StoreSimStack, _ account: String) async throws -> [(String, String, String)] {
        try await stack.history(of: account).filter { $0.kind == .storeAction }.map {
            ($0.storeSubtype ?? "", $0.actor ?? "", $0.reason ?? "")
        }
    }

    @Test(
        "revoke and refund: access ends at once, a refund without revoke keeps it; twice, an unknown order and a 429 are refused"
    )
    func revokeAndRefund() async throws {
        let stack = try await StoreSimStack(inProcess: true)
        do {
            let (account, token, order) = try await Self.subscribed(stack)
            func refund(_ orderID: String, revoke: Bool) async throws -> GoogleStoreActionResponse {
                try await stack.verifierClient.call(
                    VerifierRPC.refundGoogleOrder.name,
                    RefundGoogleOrderRequest(
                        packageName: Self.package, orderID: orderID, purchaseToken: token, revoke: revoke,
                        reason: "ticket 12"))
            }

            let refunded = try await refund(order, revoke: false)
            #expect(refunded.subscription?.state == .active)
            #expect(try await stack.check(account, at: try await stack.simNow()).allowed)
            #expect(
                await Self.refusal { _ = try await refund(order, revoke: true) }
                    == RPCError(
                        .failedPrecondition,
                        "Google Play refused REFUND_ORDER (HTTP 400 FAILED_PRECONDITION: orders.refund of \(order) for "
                            + "\(Self.package): The order has already been refunded.); an order already refunded, or "
                            + "older than 3 years, cannot be refunded"))
            #expect(
                await Self.refusal { _ = try await refund(order + "..7", revoke: false) }
                    == RPCError(
                        .notFound,
                        "Google Play refused REFUND_ORDER (HTTP 404 NOT_FOUND: orders.refund of \(order)..7 for "
                            + "\(Self.package): No order was found for the given order ID.); check the purchase token "
                            + "and the order id (GPA.…, a renewal's GPA.…..N)"))
            try await stack.control("google/api-faults", ["count": 1, "status": 429, "path": ":revoke"])
            func revoke() async throws -> GoogleStoreActionResponse {
                try await stack.verifierClient.call(
                    VerifierRPC.revokeGooglePurchase.name,
                    RevokeGooglePurchaseRequest(
                        purchaseToken: token, packageName: Self.package, refund: .full, reason: "ticket 13"))
            }
            #expect(
                await Self.refusal { _ = try await revoke() }
                    == RPCError(
                        .resourceExhausted,
                        "Google Play refused REVOKE (HTTP 429 RESOURCE_EXHAUSTED: purchases.subscriptionsv2.revoke for "
                            + "\(Self.package): Quota exceeded.); Play's quota for this call is used up, try again after 1 s"
                    ))
            #expect(try await Self.actions(stack, account).map(\.0) == ["REFUND_ORDER"])

            let revoked = try await revoke()
            #expect(revoked.subscription?.state == .revoked)
            // The entitlement service learns of the revocation from the ledger's feed.
            let denied = try await stack.eventually(account, "the revocation") { !$0.allowed }
            #expect(!denied.allowed && denied.reason == .revoked)
            let actions = try await Self.actions(stack, account)
            #expect(actions.map(\.0) == ["REFUND_ORDER", "REVOKE"])
            #expect(actions.map(\.2) == ["ticket 12", "ticket 13"])
            #expect(actions.allSatisfy { $0.1.hasPrefix("address 127.0.0.1:") })
            #expect(
                await Self.refusal { _ = try await revoke() }?.message
                    == "Google Play refused REVOKE (HTTP 400 FAILED_PRECONDITION: purchases.subscriptionsv2.revoke for "
                    + "\(Self.package): The subscription is not active and cannot be revoked.); only a subscription that "
                    + "still gives access can be revoked")
            // Play's notifications of the revocation reach the verifier and change nothing more.
            try await stack.control("google/api-faults")
            _ = try await stack.eventuallyInHistory(of: account, "REVOKED") { $0.contains("SUBSCRIPTION_REVOKED") }
            #expect(try await stack.check(account, at: try await stack.simNow()).reason == .revoked)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "defer moves the period's end and CheckAccess follows; cancel keeps access to the end; refusals change nothing")
    func deferAndCancel() async throws {
        // The verifier judges a cancelled Play subscription past its expiry (by its own clock) as
        // expired: the store's clock starts now so that the cancellation falls inside the period.
        let stack = try await StoreSimStack(start: nil, inProcess: true)
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, verified) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            let end = try #require(verified.subscription?.expiresTimeMilliseconds)
            func deferral(days: Int32) async throws -> GoogleStoreActionResponse {
                try await stack.verifierClient.call(
                    VerifierRPC.deferGoogleRenewal.name,
                    DeferGoogleRenewalRequest(
                        purchaseToken: token, packageName: Self.package, productID: "pro_sub", days: days,
                        reason: "outage"))
            }
            let deferred = try await deferral(days: 10)
            let moved = end + 10 * 86_400_000
            #expect(deferred.subscription?.expiresTimeMilliseconds == moved)
            // The entitlement service learns of the new end from the ledger's feed: asked of a view
            // that has the deferral.
            #expect(try await stack.checkAfterLedger(account, at: end + 86_400_000).allowed)
            #expect(try await stack.check(account, at: moved + 86_400_000).allowed == false)
            try await stack.control("google/api-faults")
            _ = try await stack.eventuallyInHistory(of: account, "DEFERRED") { $0.contains("SUBSCRIPTION_DEFERRED") }

            func cancel() async throws -> GoogleStoreActionResponse {
                try await stack.verifierClient.call(
                    VerifierRPC.cancelGoogleSubscription.name,
                    CancelGoogleSubscriptionRequest(purchaseToken: token, packageName: Self.package, reason: "asked"))
            }
            let cancelled = try await cancel()
            #expect(cancelled.subscription?.state == .cancelled && cancelled.subscription?.autoRenew == false)
            let still = try await stack.check(account, at: moved - 86_400_000)
            #expect(still.allowed && still.untilMilliseconds == moved)
            #expect(
                await Self.refusal { _ = try await cancel() }
                    == RPCError(
                        .failedPrecondition,
                        "Google Play refused CANCEL (HTTP 400 FAILED_PRECONDITION: purchases.subscriptionsv2.cancel for "
                            + "\(Self.package): The subscription is not active and renewing; it cannot be cancelled.); "
                            + "only an active, renewing subscription can be cancelled"))
            #expect(await Self.refusal { _ = try await deferral(days: 1) }?.code == .failedPrecondition)
            let actions = try await Self.actions(stack, account)
            #expect(actions.map(\.0) == ["DEFER_RENEWAL", "CANCEL"])
            #expect(actions.map(\.2) == ["outage", "asked"])
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("refund, defer and cancel under Play's quota answer (429) are RESOURCE_EXHAUSTED and change nothing")
    func rateLimited() async throws {
        let stack = try await StoreSimStack(inProcess: true)
        do {
            let (account, token, order) = try await Self.subscribed(stack)
            let client = stack.verifierClient
            let operations: [(String, String, @Sendable () async throws -> Void)] = [
                (
                    "REFUND_ORDER", ":refund",
                    {
                        let _: GoogleStoreActionResponse = try await client.call(
                            VerifierRPC.refundGoogleOrder.name,
                            RefundGoogleOrderRequest(
                                packageName: Self.package, orderID: order, purchaseToken: token, revoke: false,
                                reason: "ticket 12"))
                    }
                ),
                (
                    "DEFER_RENEWAL", ":defer",
                    {
                        let _: GoogleStoreActionResponse = try await client.call(
                            VerifierRPC.deferGoogleRenewal.name,
                            DeferGoogleRenewalRequest(
                                purchaseToken: token, packageName: Self.package, productID: "pro_sub", days: 3,
                                reason: "outage"))
                    }
                ),
                (
                    "CANCEL", ":cancel",
                    {
                        let _: GoogleStoreActionResponse = try await client.call(
                            VerifierRPC.cancelGoogleSubscription.name,
                            CancelGoogleSubscriptionRequest(
                                purchaseToken: token, packageName: Self.package, reason: "asked"))
                    }
                ),
            ]
            for (name, path, call) in operations {
                let before = try await stack.history(of: account).count
                try await stack.control("google/api-faults", ["count": 1, "status": 429, "path": path])
                let refusal = await Self.refusal { try await call() }
                #expect(refusal?.code == .resourceExhausted, "\(name): \(String(describing: refusal))")
                #expect(refusal?.message.hasPrefix("Google Play refused \(name) (HTTP 429") == true, "\(name)")
                #expect(try await stack.control("google/api-faults")["remaining"] as? Int == 0, "\(name)")
                #expect(try await stack.history(of: account).count == before, "\(name)")
            }
            #expect(try await stack.check(account, at: try await stack.simNow()).allowed)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
