import Foundation
import GooglePlay
import HTTPClient
import Model
import Observability
public import Wire

/// What an operator does at Google Play for a support ticket: revoke a subscription with a
/// refund, refund one order, defer a renewal, cancel a subscription. Each acts on a purchase the
/// ledger has, then reads the purchase again from Play and records that state with an
/// `EVENT_KIND_STORE_ACTION` event naming the action, who asked (`actor`), why (`reason`) and
/// what Play answered (`detail`). A refusal by Play changes nothing in the ledger.
extension GoogleAdapter {
    /// The shortest and the longest deferral Play takes in one call: one day, one year.
    public static let deferralRange: ClosedRange<Int64> = 86_400_000...(365 * 86_400_000)

    /// `purchases.subscriptionsv2.revoke`: access ends now, with a full or prorated refund.
    public func revokePurchase(_ request: RevokeGooglePurchaseRequest, actor: String) async throws
        -> GoogleStoreActionResponse
    {
        try PurchaseChecks.check(request.reason, RevokeGooglePurchaseRequest.Limits.reason)
        try PurchaseChecks.check(request.purchaseToken, RevokeGooglePurchaseRequest.Limits.purchaseToken)
        let refund: GoogleRevocationRefund
        switch request.refund {
        case .full?: refund = .full
        case .prorated?: refund = .prorated
        default: throw GoogleAdapterError.invalidRequest("refund must be FULL or PRORATED")
        }
        let subscription = try await recordedSubscription(request.purchaseToken, packageName: request.packageName)
        let action = "REVOKE"
        let time = nowMilliseconds
        try await act(action) { () async throws(GooglePlayAPIError) in
            try await api.revokeSubscription(
                packageName: request.packageName, token: request.purchaseToken, refund: refund)
        }
        return try await recordAction(
            subscription, action: action, actor: actor, reason: request.reason,
            detail: "revoked with a \(refund == .full ? "full" : "prorated") refund", revokedAt: time)
    }

    /// `orders.refund` of one order of a purchase the ledger has (a renewal's order refunds that
    /// order only); with `revoke`, access ends too.
    public func refundOrder(_ request: RefundGoogleOrderRequest, actor: String) async throws
        -> GoogleStoreActionResponse
    {
        try PurchaseChecks.check(request.reason, RefundGoogleOrderRequest.Limits.reason)
        try PurchaseChecks.check(request.orderID, RefundGoogleOrderRequest.Limits.orderID)
        try PurchaseChecks.check(request.purchaseToken, RefundGoogleOrderRequest.Limits.purchaseToken)
        let subscription = try await recorded(request.purchaseToken, packageName: request.packageName)
        let periods = try await ledger.recordedState(subscription.key)?.1 ?? []
        let orders = Set(periods.map(\.googleOrderID).filter { !$0.isEmpty }.map(Self.orderBase))
        guard orders.isEmpty || orders.contains(Self.orderBase(request.orderID)) else {
            throw GoogleAdapterError.invalidRequest(
                "order \(request.orderID.printableASCII(limit: 64)) is not an order of this purchase token "
                    + "(its orders are \(orders.sorted().joined(separator: ", ")) and their renewals ..N)")
        }
        let action = "REFUND_ORDER"
        let time = nowMilliseconds
        try await act(action) { () async throws(GooglePlayAPIError) in
            try await api.refundOrder(
                packageName: request.packageName, orderID: request.orderID, revoke: request.revoke)
        }
        return try await recordAction(
            subscription, action: action, actor: actor, reason: request.reason,
            detail: "order \(request.orderID.printableASCII(limit: 64)) refunded"
                + (request.revoke ? " and revoked" : "; access stays"),
            revokedAt: request.revoke ? time : nil)
    }

    /// `purchases.subscriptions.defer`: the expiry Play reads now moves `days` later, or to
    /// `desired_expiry_ms`, between one day and one year later.
    public func deferRenewal(_ request: DeferGoogleRenewalRequest, actor: String) async throws
        -> GoogleStoreActionResponse
    {
        try PurchaseChecks.check(request.reason, DeferGoogleRenewalRequest.Limits.reason)
        try PurchaseChecks.check(request.purchaseToken, DeferGoogleRenewalRequest.Limits.purchaseToken)
        try PurchaseChecks.check(request.productID, DeferGoogleRenewalRequest.Limits.productID)
        guard (request.days == nil) != (request.desiredExpiryMilliseconds == nil) else {
            throw GoogleAdapterError.invalidRequest("give exactly one of days and desired_expiry_ms")
        }
        if let days = request.days, !(1...365).contains(days) {
            throw GoogleAdapterError.invalidRequest("days must be 1 to 365, got \(days)")
        }
        let subscription = try await recordedSubscription(request.purchaseToken, packageName: request.packageName)
        let purchase: SubscriptionPurchaseV2
        do {
            purchase = try await api.subscription(packageName: request.packageName, token: request.purchaseToken)
        } catch {
            throw GoogleAdapterError.store(error)
        }
        guard
            let item = (purchase.lineItems ?? []).first(where: { $0.productId == request.productID }),
            let expected = GooglePlayLifecycle.millis(item.expiryTime)
        else { throw GoogleAdapterError.wrongProduct(request.productID) }
        let desired = request.desiredExpiryMilliseconds ?? expected + Int64(request.days ?? 0) * 86_400_000
        guard Self.deferralRange.contains(desired - expected) else {
            throw GoogleAdapterError.invalidRequest(
                "the new expiry must be 1 to 365 days after the current one (\(EpochTime.iso8601(expected)))"
                    + ", got \(EpochTime.iso8601(desired))")
        }
        let action = "DEFER_RENEWAL"
        var newExpiry: Int64 = 0
        try await act(action) { () async throws(GooglePlayAPIError) in
            newExpiry = try await api.deferSubscription(
                packageName: request.packageName, subscriptionID: request.productID, token: request.purchaseToken,
                expectedExpiry: expected, desiredExpiry: desired)
        }
        return try await recordAction(
            subscription, action: action, actor: actor, reason: request.reason,
            detail: "renewal deferred from \(EpochTime.iso8601(expected)) to "
                + EpochTime.iso8601(newExpiry))
    }

    /// `purchases.subscriptionsv2.cancel` (`USER_REQUESTED_STOP_RENEWALS`): renewal stops,
    /// access stays to the period's end.
    public func cancelSubscription(_ request: CancelGoogleSubscriptionRequest, actor: String) async throws
        -> GoogleStoreActionResponse
    {
        try PurchaseChecks.check(request.reason, CancelGoogleSubscriptionRequest.Limits.reason)
        try PurchaseChecks.check(request.purchaseToken, CancelGoogleSubscriptionRequest.Limits.purchaseToken)
        let subscription = try await recordedSubscription(request.purchaseToken, packageName: request.packageName)
        let action = "CANCEL"
        try await act(action) { () async throws(GooglePlayAPIError) in
            try await api.cancelSubscription(packageName: request.packageName, token: request.purchaseToken)
        }
        return try await recordAction(
            subscription, action: action, actor: actor, reason: request.reason,
            detail: "renewal cancelled (USER_REQUESTED_STOP_RENEWALS); access stays to the period's end")
    }

    // MARK: Steps

    /// The ledger's record of `token` in a package this verifier serves (production first, then
    /// a test purchase); `.notInLedger` when the ledger has neither.
    private func recorded(_ token: String, packageName: String) async throws -> Subscription {
        guard catalog.packages.contains(packageName) else { throw GoogleAdapterError.packageNotServed(packageName) }
        for test in [false, true] {
            if let subscription = try await ledger.subscription(Self.key(token, test: test)),
                subscription.bundleOrPackage == packageName
            {
                return subscription
            }
        }
        throw GoogleAdapterError.notInLedger(Self.key(token, test: false))
    }

    /// `recorded`, refusing a one-time purchase (only its order can be refunded).
    private func recordedSubscription(_ token: String, packageName: String) async throws -> Subscription {
        let subscription = try await recorded(token, packageName: packageName)
        switch subscription.productKind {
        case .consumable?, .nonConsumable?:
            throw GoogleAdapterError.invalidRequest(
                "the purchase token is a one-time product's; refund its order with RefundGoogleOrder instead")
        default: return subscription
        }
    }

    /// Runs Play's call for `action`, its refusal as `.actionRefused`.
    private func act(_ action: String, _ call: () async throws(GooglePlayAPIError) -> Void) async throws {
        do {
            try await call()
        } catch {
            logger.warning("google play refused a store action", ["action": action, "error": "\(error)"])
            throw GoogleAdapterError.actionRefused(error, action: action)
        }
    }

    /// Reads the purchase again and records it with the action's event.
    private func recordAction(
        _ subscription: Subscription, action: String, actor: String, reason: String, detail: String,
        revokedAt: Int64? = nil
    ) async throws -> GoogleStoreActionResponse {
        logger.info(
            "google store action",
            ["action": action, "actor": actor, "token_prefix": String(subscription.key.storeID.prefix(12))])
        let event = FetchEvent(
            kind: .storeAction, storeType: "API", storeSubtype: action, actor: actor, reason: reason, detail: detail,
            revokedAt: revokedAt)
        let after = try await reread(subscription, detail: action, event: event)
        return GoogleStoreActionResponse(subscription: after, detail: detail)
    }

    /// An order id without its renewal suffix: `GPA.1-2-3-4..5` is of `GPA.1-2-3-4`.
    static func orderBase(_ orderID: String) -> String {
        orderID.range(of: "..").map { String(orderID[..<$0.lowerBound]) } ?? orderID
    }
}
