import Foundation
import Synchronization

extension GoogleSimStore {
    /// The notifications made since the last call, oldest first.
    public func takeOutbox() -> [Message] {
        state.withLock { state in
            defer { state.outbox.removeAll() }
            return state.outbox
        }
    }

    /// Every order of the purchase `token` (a subscription's first order, renewals and top-ups,
    /// or a one-time purchase's order once paid), oldest first. Throws `.notFound` for an unknown
    /// token.
    public func orders(of token: String) throws(SimError) -> [Order] {
        try change { state, _ throws(SimError) in
            if let purchase = state.oneTime[token] { return purchase.order.map { [$0] } ?? [] }
            return try Self.purchase(token, in: state).orders
        }
    }

    /// `SubscriptionPurchaseV2` for `token`, as the API answers it now. Throws `.notFound` for a
    /// token that is not a subscription's.
    func subscriptionV2(_ token: String) throws(SimError) -> [String: any Sendable] {
        try change { state, now throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            let paid = purchase.orders.last?.id
            // A deferred change's token shows the plan it replaces until that plan's period ends,
            // naming the new product in `deferredItemReplacement` (Google: "the productId going to
            // replace the existing productId"); the new plan is not paid for, nor in force, before.
            var deferredFrom: Item?
            if case .deferred = purchase.phase, let linked = purchase.linkedPurchaseToken {
                deferredFrom = state.purchases[linked]?.items.first
            }
            let lineItems = purchase.items.enumerated().map { index, item -> [String: any Sendable] in
                let shown = index == 0 ? deferredFrom ?? item : item
                var lineItem: [String: any Sendable] = [
                    "productId": shown.productID,
                    "offerDetails": ["basePlanId": shown.basePlanID] as [String: any Sendable],
                ]
                if index == 0, deferredFrom != nil {
                    lineItem["deferredItemReplacement"] = ["productId": item.productID] as [String: any Sendable]
                }
                // Not paid yet (pending): no period, so no expiryTime (a reader must not need one).
                switch purchase.phase {
                case .pending, .pendingCanceled: break
                default: lineItem["expiryTime"] = Self.rfc3339(purchase.expiry)
                }
                if item.prepaid {
                    var plan: [String: any Sendable] = [:]
                    if let after = Self.allowExtendAfterTime(purchase, now: now) {
                        plan["allowExtendAfterTime"] = Self.rfc3339(after)
                    }
                    lineItem["prepaidPlan"] = plan
                } else {
                    // Play leaves autoRenewEnabled out when it is false (the recorded CANCELED,
                    // REVOKED and EXPIRED answers have an autoRenewingPlan without it).
                    lineItem["autoRenewingPlan"] =
                        (item.autoRenew ? ["autoRenewEnabled": true] : [:]) as [String: any Sendable]
                }
                // One order pays for every item of the billing period.
                if let paid { lineItem["latestSuccessfulOrderId"] = paid }
                return lineItem
            }
            var body: [String: any Sendable] = [
                "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US",
                "subscriptionState": Self.stateName(purchase),
                "acknowledgementState": purchase.acknowledged
                    ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
                "lineItems": lineItems,
            ]
            switch purchase.phase {
            // Google: startTime is "not set for pending subscriptions".
            case .pending, .pendingCanceled: break
            default: body["startTime"] = Self.rfc3339(purchase.startTime)
            }
            switch purchase.phase {
            case .grace, .onHold:
                // The renewal order being retried (the recorded IN_GRACE_PERIOD and ON_HOLD answers).
                body["latestOrderId"] = purchase.nextOrderID
            default:
                if let paid { body["latestOrderId"] = paid }
            }
            if let linked = purchase.linkedPurchaseToken { body["linkedPurchaseToken"] = linked }
            if let account = purchase.obfuscatedAccountID {
                body["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": account] as [String: any Sendable]
            }
            if purchase.test { body["testPurchase"] = [:] as [String: any Sendable] }
            if case .paused(let resumeAt) = purchase.phase {
                body["pausedStateContext"] = ["autoResumeTime": Self.rfc3339(resumeAt)] as [String: any Sendable]
            }
            switch purchase.ending {
            case .user(let at):
                body["canceledStateContext"] =
                    ["userInitiatedCancellation": ["cancelTime": Self.rfc3339(at)] as [String: any Sendable]]
                    as [String: any Sendable]
            case .system:
                body["canceledStateContext"] = ["systemInitiatedCancellation": [:] as [String: any Sendable]]
            case .developer:
                body["canceledStateContext"] = ["developerInitiatedCancellation": [:] as [String: any Sendable]]
            case .replacement:
                body["canceledStateContext"] = ["replacementCancellation": [:] as [String: any Sendable]]
            case nil:
                break
            }
            return body
        }
    }

    /// When a prepaid plan may be topped up: from the start of its latest paid period; nil while a
    /// top-up already extends it (Google: "Not present if the subscription is already extended
    /// by a top-up purchase") or once it has expired.
    static func allowExtendAfterTime(_ purchase: Purchase, now: Int64) -> Int64? {
        guard purchase.phase == .active, let last = purchase.orders.last, last.start <= now else { return nil }
        return last.start
    }

    static func stateName(_ purchase: Purchase) -> String {
        switch purchase.phase {
        // A deferred replacement reads ACTIVE before its first order; the token it replaces still
        // gives access until then.
        case .active, .deferred: "SUBSCRIPTION_STATE_ACTIVE"
        case .canceled: "SUBSCRIPTION_STATE_CANCELED"
        case .grace: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
        case .onHold: "SUBSCRIPTION_STATE_ON_HOLD"
        case .paused: "SUBSCRIPTION_STATE_PAUSED"
        case .expired: "SUBSCRIPTION_STATE_EXPIRED"
        case .pending: "SUBSCRIPTION_STATE_PENDING"
        case .pendingCanceled: "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
        }
    }

    // MARK: Notifications

    func emit(_ state: inout State, _ token: String, _ type: Int, at now: Int64) {
        let purchase = state.purchases[token]!
        append(
            &state,
            [
                "subscriptionNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token,
                    "subscriptionId": purchase.productID,
                ] as [String: any Sendable]
            ], kind: "subscription \(type)", at: now)
    }

    func emitOneTime(_ state: inout State, _ token: String, _ type: Int, at now: Int64) {
        let purchase = state.oneTime[token]!
        append(
            &state,
            [
                "oneTimeProductNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token, "sku": purchase.productID,
                ] as [String: any Sendable]
            ], kind: "oneTime \(type)", at: now)
    }

    func emitVoided(
        _ state: inout State, _ token: String, orderID: String, productType: Int, refundType: Int, at now: Int64
    ) {
        append(
            &state,
            [
                "voidedPurchaseNotification": [
                    "purchaseToken": token, "orderId": orderID, "productType": productType, "refundType": refundType,
                ] as [String: any Sendable]
            ], kind: "voided", at: now)
    }

    /// Queues a notification made at `now` (the simulator's clock: its `eventTimeMillis`).
    /// Sends a notification of a kind Play may add later (`member`, e.g. `futureNotification`,
    /// holding `{"version": "1.0"}`): a backend must record and acknowledge it, not refuse it.
    public func notifyNewKind(_ member: String) throws(SimError) {
        guard !member.isEmpty, member.utf8.count <= 64,
            ![
                "subscriptionNotification", "oneTimeProductNotification", "voidedPurchaseNotification",
                "testNotification",
            ]
            .contains(member)
        else { throw SimError(.badRequest, "kind must be 1 to 64 bytes and not one of the four Play sends today") }
        try change { state, now in
            append(&state, [member: ["version": "1.0"] as [String: any Sendable]], kind: "new kind \(member)", at: now)
        }
    }

    private func append(_ state: inout State, _ fields: [String: any Sendable], kind: String, at now: Int64) {
        var notification = fields
        notification["version"] = "1.0"
        notification["packageName"] = configuration.packageName
        notification["eventTimeMillis"] = String(now)
        guard let data = try? JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys]) else {
            preconditionFailure("a notification is always JSON")
        }
        state.outbox.append(Message(id: String(state.nextMessage), notification: data, eventTime: now, kind: kind))
        state.nextMessage += 1
    }
}
