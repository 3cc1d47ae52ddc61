import Clients
import Crypto
import Foundation
import GooglePlay
import HTTPClient
public import Model
import Observability
import RPC
public import Wire

/// Purchases an app backend presents, and acknowledgement.
///
/// A purchase is acknowledged only after the ledger has it and it is linked to an account
/// (validate, record, grant, then acknowledge). An acknowledgement that fails stays in the
/// ledger's inbox as a pending `ACKNOWLEDGE` item that reconciliation retries until Google takes
/// it, well inside the three days after which Google refunds an unacknowledged purchase.
extension GoogleAdapter {
    /// Inbox items that stand for an acknowledgement still owed to Google.
    static let acknowledgeType = "ACKNOWLEDGE"

    /// Verifies a purchase token for an account: fetch → check package and product → record →
    /// link (the obfuscated account id, when present, must be the account's: the account id
    /// itself or its SHA-256 in hex) → acknowledge when still pending.
    /// With `imported` (an import's restore: the caller and the reason) the state is recorded
    /// with an `imported` event naming them.
    public func verifyPurchase(
        _ request: VerifyGooglePurchaseRequest, imported: (actor: String, reason: String)? = nil
    ) async throws -> VerifyPurchaseResponse {
        try PurchaseChecks.check(request.accountID, VerifyGooglePurchaseRequest.Limits.accountID)
        try PurchaseChecks.check(request.idempotencyKey, VerifyGooglePurchaseRequest.Limits.idempotencyKey)
        guard catalog.packages.contains(request.packageName) else {
            throw GoogleAdapterError.packageNotServed(request.packageName)
        }
        for (value, limit) in [
            (request.productID, VerifyGooglePurchaseRequest.Limits.productID),
            (request.purchaseToken, VerifyGooglePurchaseRequest.Limits.purchaseToken),
        ] where !limit.admits(value) {
            throw GoogleAdapterError.invalidRequest(limit.requirement)
        }
        let subscription: Subscription
        do {
            subscription = try await fetchAndRecord(
                packageName: request.packageName, productID: request.productID, token: request.purchaseToken,
                detail: imported == nil ? "VerifyGooglePurchase" : "RestorePurchases", requireProduct: true,
                event: imported.map {
                    FetchEvent(
                        kind: .imported, storeType: "API", actor: $0.actor, reason: $0.reason,
                        detail: "RestorePurchases")
                })
        } catch {
            throw GoogleAdapterError.presented(
                error,
                .init(
                    packageName: request.packageName, productID: request.productID,
                    oneTime: catalog.oneTimeProducts.contains(request.productID)))
        }
        if let reference = subscription.storeAccountRef, !Self.accountMatches(reference, request.accountID) {
            throw GoogleAdapterError.otherAccount
        }
        let link = try await ledger.linkAccount(
            LinkAccountRequest(
                idempotencyKey: request.idempotencyKey, key: subscription.key, accountID: request.accountID,
                storeAccountRef: subscription.storeAccountRef))
        try PurchaseChecks.linked(link)
        // The ledger's state now (a replayed link answers as it did the first time).
        var current = try await ledger.subscription(subscription.key) ?? subscription
        if !current.acknowledged, !subscription.acknowledged, Self.owesAcknowledgement(current) {
            current = await acknowledgeOrQueue(current, packageName: request.packageName)
        }
        return VerifyPurchaseResponse(
            subscription: current, newlyLinked: link.outcome == .linked || link.outcome == .transferred,
            previousAccountID: link.previousAccountID)
    }

    /// Asks Google for one purchase's current state and records it; when an operator `asked`
    /// (the caller and the reason), with a `storeAction` event (`REFRESH`) naming them, whose
    /// detail says whether Play's answer changed the state the ledger held. An operator's refresh
    /// of a purchase linked to an account that Play still waits to see acknowledged acknowledges
    /// it, as a verification would (the acknowledgement work queue's action): Play refunds one left
    /// unacknowledged for three days.
    public func refresh(_ key: SubscriptionKey, asked: (actor: String, reason: String)? = nil) async throws
        -> RefreshSubscriptionResponse
    {
        guard let before = try await ledger.subscription(key) else {
            throw GoogleAdapterError.notInLedger(key)
        }
        let event = asked.map {
            FetchEvent(
                kind: .storeAction, storeType: "API", storeSubtype: PurchaseChecks.refreshAction, actor: $0.actor,
                reason: $0.reason, refreshedFrom: before)
        }
        var after = try await reread(before, detail: "RefreshSubscription", event: event)
        let changed = PurchaseChecks.differs(before, after)
        if asked != nil, !after.acknowledged, Self.owesAcknowledgement(after), !(after.accountID ?? "").isEmpty {
            after = await acknowledgeOrQueue(after, packageName: after.bundleOrPackage)
        }
        return RefreshSubscriptionResponse(subscription: after, changed: changed)
    }

    // MARK: Steps

    /// The notification (or acknowledgement) a fetch records its state with.
    struct FetchEvent: Sendable {
        var kind: EventKind
        var storeType: String
        /// The event time; nil: the fetch's own store time.
        var time: Int64?
        var notificationID: String?
        /// The RTDN `notificationType`, when a notification led to the fetch.
        var notificationType: Int?
        /// For an operator's action at the store: the action (`store_subtype`), who asked, why,
        /// and what Play answered.
        var storeSubtype: String?
        var actor: String?
        var reason: String?
        var detail: String?
        /// The action ended access at this time: a subscription Play reads expired after it is
        /// recorded revoked from then.
        var revokedAt: Int64?
        /// For an operator's refresh (`REFRESH`): the state the ledger held before; the detail
        /// recorded then says whether Play's answer changed it.
        var refreshedFrom: Subscription?
        /// The state's write also marks the inbox entry `notificationID` processed (one durable
        /// write instead of two), when nothing is left to do for the notification after it.
        var completesNotification = false
    }

    /// Fetches a subscription (subscriptionsv2) or a one-time product, by the catalog's word for
    /// `productID`, and records it.
    func fetchAndRecord(
        packageName: String, productID: String, token: String, detail: String, requireProduct: Bool,
        event: FetchEvent? = nil
    ) async throws -> Subscription {
        if catalog.oneTimeProducts.contains(productID) {
            return try await fetchAndRecordOneTime(
                packageName: packageName, productID: productID, token: token, detail: detail, event: event)
        }
        return try await fetchAndRecordSubscription(
            packageName: packageName, productID: productID, token: token, detail: detail,
            requireProduct: requireProduct, event: event
        ).0
    }

    /// Fetches subscriptionsv2 for `token` and records the state, its periods (one per line item
    /// for the order it names) and the event. The store time is taken before the request is
    /// sent: a slow answer never outranks a fetch that was sent after it.
    func fetchAndRecordSubscription(
        packageName: String, productID: String, token: String, detail: String, requireProduct: Bool = false,
        event: FetchEvent? = nil, acknowledged: Bool = false, readsReplaced: Bool = true
    ) async throws -> (Subscription, SubscriptionPurchaseV2) {
        let storeTime = nowMilliseconds
        let purchase: SubscriptionPurchaseV2
        do {
            purchase = try await api.subscription(packageName: packageName, token: token)
        } catch {
            throw GoogleAdapterError.store(error)
        }
        // A deferred plan change's token shows the plan still in force and names the bought one
        // in `deferredItemReplacement`: either is the purchase the app may present.
        if requireProduct,
            !(purchase.lineItems ?? []).contains(where: {
                $0.productId == productID || $0.deferredItemReplacement?.productId == productID
            })
        {
            throw GoogleAdapterError.wrongProduct(productID)
        }
        var subscription = try Self.incomplete { () throws(GooglePlayLifecycle.Incomplete) in
            try GooglePlayLifecycle.subscription(
                purchase, token: token, packageName: packageName, storeTime: storeTime, now: now())
        }
        var circumstances = GooglePlayLifecycle.Circumstances()
        if let event, let time = event.time {
            switch event.notificationType {
            case 12?: circumstances.revokedAt = time
            case 1?: circumstances.recoveredAt = time
            default: break
            }
        }
        if let revoked = event?.revokedAt, subscription.state == .expired { circumstances.revokedAt = revoked }
        if let revoked = circumstances.revokedAt {
            // subscriptionsv2 reports a revoked subscription as expired; the notification says when.
            subscription.state = .revoked
            subscription.revokedTimeMilliseconds = min(revoked, subscription.expiresTimeMilliseconds ?? revoked)
        }
        if acknowledged { subscription.acknowledged = true }
        // One step back only: answers that named each other must not read each other forever.
        if readsReplaced {
            try await refreshReplaced(purchase, of: subscription.key, packageName: packageName, productID: productID)
        }
        let periods = GooglePlayLifecycle.periods(
            purchase, storeTime: storeTime, circumstances: circumstances, raw: purchase.raw)
        let completes = event?.completesNotification == true && !Self.readsOldTokenAfter(purchase)
        let recorded = try await record(
            subscription, periods: periods, raw: purchase.raw, event: event, detail: detail,
            completing: completes ? event?.notificationID : nil)
        return (recorded, purchase)
    }

    /// A dropped pending change leaves the old token as it was: it is read again after the new
    /// one's state is written, as Google asks, through `linkedPurchaseToken`.
    static func readsOldTokenAfter(_ purchase: SubscriptionPurchaseV2) -> Bool {
        purchase.subscriptionState == "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
            && !(purchase.linkedPurchaseToken ?? "").isEmpty
    }

    /// Before a real replacement is recorded, the token it replaces is read again while the
    /// ledger still has it giving access: Play moves an immediately replaced token's
    /// `expiryTime` to the change, and its EXPIRED notification may come late.
    private func refreshReplaced(
        _ purchase: SubscriptionPurchaseV2, of key: SubscriptionKey, packageName: String, productID: String
    ) async throws {
        guard let old = GooglePlayLifecycle.replaces(purchase), !old.isEmpty, old != key.storeID,
            let current = try await ledger.subscription(Self.key(old, test: key.environment == .sandbox)),
            current.replacedByStoreID == nil || current.replacedByStoreID == key.storeID
        else { return }
        switch current.state {
        case .active?, .cancelled?, .gracePeriod?:
            do {
                _ = try await fetchAndRecordSubscription(
                    packageName: packageName, productID: productID, token: old, detail: "REPLACED",
                    readsReplaced: false)
            } catch {
                logger.warning(
                    "the replaced google purchase could not be read again",
                    ["token_prefix": String(old.prefix(12)), "error": "\(error)"])
            }
        default:
            break
        }
    }

    /// Fetches a one-time purchase (`purchases.products.get`) and records it with its period.
    /// A product the catalog does not name is recorded as a non-consumable and named in a
    /// warning, so that an operator can configure it.
    func fetchAndRecordOneTime(
        packageName: String, productID: String, token: String, detail: String, event: FetchEvent? = nil,
        acknowledged: Bool = false
    ) async throws -> Subscription {
        let storeTime = nowMilliseconds
        let purchase: ProductPurchase
        do {
            purchase = try await api.productPurchase(packageName: packageName, productID: productID, token: token)
        } catch {
            throw GoogleAdapterError.store(error)
        }
        if !catalog.oneTimeProducts.contains(productID) {
            counters.unconfiguredProducts.increment()
            logger.warning(
                "a one-time product the configuration does not name; recorded as non-consumable",
                ["product": String(productID.prefix(100)), "package": packageName])
        }
        let consumable = catalog.consumableProducts.contains(productID)
        var subscription = try Self.incomplete { () throws(GooglePlayLifecycle.Incomplete) in
            try GooglePlayLifecycle.oneTimePurchase(
                purchase, token: token, packageName: packageName, productID: productID, consumable: consumable,
                storeTime: storeTime)
        }
        if acknowledged { subscription.acknowledged = true }
        let period = GooglePlayLifecycle.oneTimePeriod(
            purchase, productID: productID, consumable: consumable, storeTime: storeTime, raw: purchase.raw)
        return try await record(
            subscription, periods: period.map { [$0] } ?? [], raw: purchase.raw, event: event, detail: detail)
    }

    /// Records a fetched state with its periods and event (the answer's raw JSON on the event),
    /// marking the inbox entry `completing` processed in the same write.
    private func record(
        _ subscription: Subscription, periods: [Period], raw: String?, event: FetchEvent?, detail: String,
        completing: String? = nil
    ) async throws -> Subscription {
        let storeTime = subscription.storeTimeMilliseconds ?? nowMilliseconds
        let recorded = LifecycleEvent(
            key: subscription.key, kind: event?.kind ?? .stateRefreshed,
            storeTimeMilliseconds: event?.time ?? storeTime,
            storeType: event?.storeType ?? "API", storeSubtype: event?.storeSubtype,
            notificationID: event?.notificationID, state: subscription.state,
            detail: event.map { event -> String? in
                event.storeSubtype == PurchaseChecks.refreshAction
                    ? PurchaseChecks.refreshDetail(before: event.refreshedFrom, after: subscription) : event.detail
            } ?? detail, rawTransaction: raw, actor: event?.actor,
            reason: event?.reason)
        return try await ledger.recordFetchedState(
            subscription, event: recorded, periods: periods, completing: completing, keyPrefix: "google-state-")
    }

    /// Acknowledges (or consumes) `subscription` with Google and records that; when Google does
    /// not take it now, queues it in the inbox for reconciliation. Returns the state as recorded.
    func acknowledgeOrQueue(_ subscription: Subscription, packageName: String) async -> Subscription {
        // Written ahead: should this process die before Google has the acknowledgement, the
        // pending item is still there for reconciliation.
        let id = "ack-" + Digest.sha256Hex(Array(subscription.key.storeID.utf8)).prefix(40)
        let entry = InboxEntry(
            store: .google, environment: subscription.key.environment, notificationID: id,
            notificationType: Self.acknowledgeType, key: subscription.key)
        do {
            _ = try await ledger.recordNotification(RecordNotificationRequest(entry: entry))
        } catch {
            logger.error("cannot queue a google acknowledgement; sending it anyway", ["error": "\(error)"])
        }
        do {
            let acknowledged = try await acknowledge(subscription, packageName: packageName)
            _ = try? await ledger.markInbox(MarkInboxRequest(store: .google, notificationID: id, status: .processed))
            return acknowledged
        } catch {
            logger.warning(
                "google acknowledgement failed; reconciliation retries it",
                ["token_prefix": String(subscription.key.storeID.prefix(12)), "error": "\(error)"])
            _ = try? await ledger.markInbox(
                MarkInboxRequest(
                    store: .google, notificationID: id, status: .failed, error: String("\(error)".prefix(2000))))
            return subscription
        }
    }

    /// Acknowledges, or consumes a consumable, then records the acknowledgement with the
    /// purchase as Google reads it after it (never the copy read before the call: a revocation
    /// recorded meanwhile stands). The ledger keeps an acknowledgement whichever state stands.
    func acknowledge(_ subscription: Subscription, packageName: String) async throws -> Subscription {
        let token = subscription.key.storeID
        let event = FetchEvent(kind: .acknowledged, storeType: "API")
        switch subscription.productKind {
        case .consumable?:
            try await api.consumeProduct(packageName: packageName, productID: subscription.productID, token: token)
        case .nonConsumable?:
            try await api.acknowledgeProduct(packageName: packageName, productID: subscription.productID, token: token)
        default:
            try await api.acknowledgeSubscription(
                packageName: packageName, subscriptionID: subscription.productID, token: token)
        }
        counters.acknowledged.increment()
        return try await reread(subscription, detail: "acknowledged", event: event, acknowledged: true)
    }

    /// Reads a recorded purchase again from the API its kind is read from (a one-time product's
    /// or subscriptionsv2) and records it.
    func reread(
        _ subscription: Subscription, detail: String, event: FetchEvent? = nil, acknowledged: Bool = false
    ) async throws -> Subscription {
        let token = subscription.key.storeID
        switch subscription.productKind {
        case .consumable?, .nonConsumable?:
            return try await fetchAndRecordOneTime(
                packageName: subscription.bundleOrPackage, productID: subscription.productID, token: token,
                detail: detail, event: event, acknowledged: acknowledged)
        default:
            return try await fetchAndRecordSubscription(
                packageName: subscription.bundleOrPackage, productID: subscription.productID, token: token,
                detail: detail, event: event, acknowledged: acknowledged
            ).0
        }
    }

    /// Whether Google expects an acknowledgement for this state (a purchase that is paid for).
    static func owesAcknowledgement(_ subscription: Subscription) -> Bool {
        switch subscription.state {
        case .active?, .cancelled?, .gracePeriod?: true
        default: false
        }
    }

    /// Whether an obfuscated account id names `accountID`: the id itself or its SHA-256 in hex.
    static func accountMatches(_ reference: String, _ accountID: String) -> Bool {
        reference == accountID || reference.lowercased() == Digest.sha256Hex(Array(accountID.utf8))
    }

    /// `body`'s reading of Google's answer, an answer it cannot record as the adapter's error.
    static func incomplete(_ body: () throws(GooglePlayLifecycle.Incomplete) -> Subscription)
        throws(GoogleAdapterError) -> Subscription
    {
        do {
            return try body()
        } catch {
            throw GoogleAdapterError.unrecordable(error)
        }
    }
}
