import Foundation
import GooglePlay
import Model
import Observability
import RPC
import Wire

/// Applying a recorded Real-time Developer Notification: a notification says something changed,
/// never the whole truth, so the purchase's current state is fetched and recorded with the
/// notification's event.
extension GoogleAdapter {
    /// What a notification asks the adapter to do.
    enum Work: Sendable, Equatable {
        /// `subscriptionNotification`: the code, the token, the subscription (product) id.
        case subscription(type: Int, token: String, productID: String)
        /// `oneTimeProductNotification`: 1 purchased, 2 canceled.
        case oneTimeProduct(type: Int, token: String, productID: String)
        /// `voidedPurchaseNotification`: access ends at the void time.
        case voided(token: String, productType: Int?)
        /// `testNotification`, or a notification kind this version does not know.
        case nothing
    }

    /// Applies one notification recorded under `messageID`; never throws: a failure marks the
    /// inbox entry failed with the reason, for reconciliation.
    func process(messageID: String, packageName: String, eventTime: Int64, work: Work) async {
        do {
            try await apply(messageID: messageID, packageName: packageName, eventTime: eventTime, work: work)
            counters.processed.increment()
        } catch {
            counters.failed.increment()
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
            let recorded = try await fetchAndRecord(
                packageName: packageName, productID: productID, token: token, detail: "RTDN", requireProduct: false,
                event: (
                    kind, SubscriptionNotificationType(rawValue: type).name ?? "SUBSCRIPTION_NOTIFICATION_\(type)",
                    eventTime, messageID
                ))
            try await acknowledgeIfLinked(recorded.key, packageName: packageName)
        case .oneTimeProduct(let type, let token, let productID):
            let kind: EventKind = type == 1 ? .purchased : type == 2 ? .pendingCancelled : .other
            let recorded = try await fetchAndRecord(
                packageName: packageName, productID: productID, token: token, detail: "RTDN", requireProduct: false,
                event: (kind, "ONE_TIME_PRODUCT_NOTIFICATION_\(type)", eventTime, messageID))
            try await acknowledgeIfLinked(recorded.key, packageName: packageName)
        case .voided(let token, _):
            try await revoke(token: token, at: eventTime, notificationID: messageID)
        }
        _ = try await ledger.markInbox(MarkInboxRequest(store: .google, notificationID: messageID, status: .processed))
    }

    /// Ends access to a voided purchase from the void time, whatever Google answers now.
    func revoke(token: String, at time: Int64, notificationID: String?) async throws {
        var found: Subscription?
        for test in [false, true] where found == nil {
            found = try await ledger.subscription(Self.key(token, test: test))
        }
        guard var subscription = found else {
            logger.info("a voided purchase the ledger never had", ["token_prefix": String(token.prefix(12))])
            return
        }
        guard subscription.state != .revoked || subscription.revokedTimeMilliseconds != time else { return }
        subscription.state = .revoked
        subscription.revokedTimeMilliseconds = time
        subscription.storeTimeMilliseconds = max(nowMilliseconds, (subscription.storeTimeMilliseconds ?? 0) + 1)
        let event = LifecycleEvent(
            key: subscription.key, kind: .refunded, storeTimeMilliseconds: time, storeType: "VOIDED_PURCHASE",
            notificationID: notificationID, state: .revoked)
        _ = try await ledger.recordFetchedState(subscription, event: event, keyPrefix: "google-void-")
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
