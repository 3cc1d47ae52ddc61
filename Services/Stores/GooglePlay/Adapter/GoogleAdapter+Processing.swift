import Clients
import Foundation
import GooglePlay
import Model
import Observability
import RPC
import Wire

/// Applying a recorded Real-time Developer Notification: a notification says something changed,
/// never the whole truth, so the purchase's current state is fetched and recorded with the
/// notification's event. Work is routed by the notification's kind: a subscription
/// notification reads subscriptionsv2, a one-time product notification the one-time purchase
/// API, a void revokes the order it names.
extension GoogleAdapter {
    /// What a notification asks the adapter to do.
    enum Work: Sendable, Equatable {
        /// `subscriptionNotification`: the code, the token, the subscription (product) id.
        case subscription(type: Int, token: String, productID: String)
        /// `oneTimeProductNotification`: 1 purchased, 2 canceled.
        case oneTimeProduct(type: Int, token: String, productID: String)
        /// `voidedPurchaseNotification`: the order it names is revoked from the event time.
        case voided(token: String, orderID: String, productType: Int, refundType: Int)
        /// `testNotification`, or a notification kind this version does not know (recorded).
        case nothing
    }

    /// Applies one notification recorded under `messageID`; never throws: a failure marks the
    /// inbox entry failed with the reason, for reconciliation. `published` is when Pub/Sub
    /// published it (epoch ms; nil for the event time), the start of its lag.
    func process(
        messageID: String, packageName: String, eventTime: Int64, published: Int64? = nil, work: Work
    ) async {
        do {
            try await apply(messageID: messageID, packageName: packageName, eventTime: eventTime, work: work)
            counters.notifications.processed.increment()
            counters.notifications.lag(.processed, sent: published ?? eventTime, now: nowMilliseconds)
        } catch {
            counters.notifications.failed(error)
            logger.warning(
                "google notification not processed; reconciliation retries it",
                ["message_id": messageID, "error": "\(error)"])
            do {
                _ = try await ledger.markInbox(
                    MarkInboxRequest(
                        store: .google, notificationID: messageID, status: .failed,
                        error: String("\(error)".prefix(2000))))
            } catch {
                logger.error("cannot mark a google notification failed", ["error": "\(error)"])
            }
        }
    }

    private func apply(messageID: String, packageName: String, eventTime: Int64, work: Work) async throws {
        switch work {
        case .nothing:
            break
        case .subscription(let type, let token, let productID):
            let kind = GooglePlayLifecycle.eventKind(subscriptionNotificationType: type)
            let (recorded, purchase) = try await fetchAndRecordSubscription(
                packageName: packageName, productID: productID, token: token, detail: "RTDN",
                event: FetchEvent(
                    kind: kind,
                    storeType: Self.typeName(subscription: type),
                    time: eventTime, notificationID: messageID, notificationType: type, completesNotification: true))
            if Self.readsOldTokenAfter(purchase), let old = purchase.linkedPurchaseToken,
                try await ledger.subscription(Self.key(old, test: recorded.key.environment == .sandbox)) != nil
            {
                _ = try await fetchAndRecordSubscription(
                    packageName: packageName, productID: productID, token: old, detail: "PENDING_PURCHASE_CANCELED")
            }
            // An acknowledgement owed is queued in the inbox before it is sent, so the state's
            // write may already have marked this notification processed.
            try await acknowledgeIfLinked(recorded.key, packageName: packageName)
            if !Self.readsOldTokenAfter(purchase) { return }
        case .oneTimeProduct(let type, let token, let productID):
            let kind: EventKind = type == 1 ? .purchased : type == 2 ? .pendingCancelled : .other
            let recorded = try await fetchAndRecordOneTime(
                packageName: packageName, productID: productID, token: token, detail: "RTDN",
                event: FetchEvent(
                    kind: kind, storeType: Self.typeName(oneTimeProduct: type), time: eventTime,
                    notificationID: messageID, notificationType: type))
            try await acknowledgeIfLinked(recorded.key, packageName: packageName)
        case .voided(let token, let orderID, _, let refundType):
            try await void(
                VoidedOrder(
                    token: token, orderID: orderID, time: eventTime, partial: refundType == 2, voidedQuantity: nil,
                    raw: nil),
                notificationID: messageID)
        }
        _ = try await ledger.markInbox(MarkInboxRequest(store: .google, notificationID: messageID, status: .processed))
    }

    /// One voided order, from a notification or the voided purchases list.
    struct VoidedOrder: Sendable {
        var token: String
        var orderID: String
        /// When Google voided it.
        var time: Int64
        /// `refundType` 2: a quantity-based partial refund of a one-time product.
        var partial: Bool
        /// How many units were voided, when the list says (`voidedQuantity`).
        var voidedQuantity: Int?
        /// The voided-purchases entry as Google listed it.
        var raw: String?
    }

    /// Revokes the voided order's own periods from the void time (a void can be for a past
    /// renewal: later orders keep their access). A partial refund of a one-time product revokes
    /// only when no unit is left. Records periods and the event only, never a state read before.
    /// Returns whether it revoked a period the ledger had not recorded as revoked.
    @discardableResult
    func void(_ order: VoidedOrder, notificationID: String?) async throws -> Bool {
        let storeTime = nowMilliseconds
        var found: (Subscription, [Period])?
        for test in [false, true] where found == nil {
            found = try await ledger.recordedState(Self.key(order.token, test: test))
        }
        guard let (subscription, periods) = found else {
            logger.info(
                "a voided purchase the ledger never had",
                ["token_prefix": String(order.token.prefix(12)), "order": String(order.orderID.prefix(40))])
            return false
        }
        var orderPeriods = periods.filter { $0.googleOrderID == order.orderID }
        if orderPeriods.isEmpty {
            // The void came before the read that records its order (notifications are unordered):
            // read the purchase now, then revoke what it proves of that order.
            _ = try? await reread(subscription, detail: "VOIDED_PURCHASE")
            orderPeriods = (try await ledger.recordedState(subscription.key)?.1 ?? []).filter {
                $0.googleOrderID == order.orderID
            }
        }
        var event = LifecycleEvent(
            key: subscription.key, kind: .refunded, storeTimeMilliseconds: order.time, storeType: "VOIDED_PURCHASE",
            notificationID: notificationID, state: subscription.state, rawTransaction: order.raw)
        var revoked: [Period] = []
        if order.partial {
            // What is left, as Google reads the purchase now: `refundableQuantity` counts every
            // partial refund so far; without it, this one voided entry against the units bought.
            let purchase = try? await api.productPurchase(
                packageName: subscription.bundleOrPackage, productID: subscription.productID, token: order.token)
            let quantity = max(purchase?.quantity ?? 1, 1)
            let left = purchase?.refundableQuantity ?? order.voidedQuantity.map { quantity - $0 }
            if let left, left <= 0 {
                revoked = orderPeriods
                event.detail = "quantity-based partial refund: none of the \(quantity) units is left"
            } else {
                event.kind = .other
                event.detail =
                    "quantity-based partial refund of order \(order.orderID.prefix(40))"
                    + (left.map { ": \($0) of \(quantity) units left" } ?? "") + "; access stays"
            }
        } else {
            revoked = orderPeriods
            if orderPeriods.isEmpty { event.detail = "voided order \(order.orderID.prefix(40)) is not recorded" }
        }
        let versions = revoked.map { period -> Period in
            var version = period
            version.revokedTimeMilliseconds = order.time
            version.revocationReason = "VOIDED_PURCHASE"
            version.signedTimeMilliseconds = storeTime
            version.raw = order.raw
            return version
        }
        _ = try await ledger.recordContent(
            RecordVerifiedStateRequest(subscription: subscription, events: [event], periods: versions, partial: true),
            keyPrefix: "google-void-")
        return revoked.contains { $0.revokedTimeMilliseconds == nil }
    }

    /// A purchase the ledger has linked to an account and Google still waits to hear about is
    /// acknowledged now (an unlinked one waits for its VerifyPurchase: no account has access yet).
    /// `key` is the purchase just recorded; its link is read back from the ledger.
    func acknowledgeIfLinked(_ key: SubscriptionKey, packageName: String) async throws {
        guard let subscription = try await ledger.subscription(key) else { return }
        if subscription.accountID != nil, !subscription.acknowledged, Self.owesAcknowledgement(subscription) {
            _ = await acknowledgeOrQueue(subscription, packageName: packageName)
        }
    }
}
