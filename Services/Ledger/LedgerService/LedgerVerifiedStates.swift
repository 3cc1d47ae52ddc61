import Crypto
import Foundation
public import Model
public import Wire

/// Verified states: the checks of a request, then its write: the rows it depends on
/// (`LedgerStore.verifiedStateRows`), the plan of its rules (`VerifiedStatePlan`), the plan
/// applied; the subscriptions' reads; and the access-rules pass (`LedgerVerifiedStates+AccessRules`).
public struct LedgerVerifiedStates: Sendable {
    let transactions: LedgerTransactions
}

extension LedgerVerifiedStates {
    /// Records a verified state and its events. Idempotent by key: a retry answers the first
    /// response with `replayed`; the same key with other content is FAILED_PRECONDITION. A state
    /// older (by store time) than the one applied goes to history only (`applied = false`).
    public func recordVerifiedState(_ request: RecordVerifiedStateRequest) async throws -> RecordVerifiedStateResponse {
        try await transactions.write(try recordVerifiedStateWrite(request))
    }

    /// `recordVerifiedState` checked and ready for the writer (which runs the returned body).
    func recordVerifiedStateWrite(_ request: RecordVerifiedStateRequest) throws -> WriteBody<
        RecordVerifiedStateResponse
    > {
        try Ledger.check(request.idempotencyKey, RecordVerifiedStateRequest.Limits.idempotencyKey)
        guard var incoming = request.subscription else { throw LedgerError.invalidArgument("subscription is missing") }
        try Ledger.check(incoming.key, "subscription.key")
        try Ledger.checkSold(incoming.key.store, "subscription.key.store")
        try Ledger.check(incoming.productID, Subscription.Limits.productID, "subscription.product_id")
        guard incoming.state != nil else { throw LedgerError.invalidArgument("subscription.state is missing") }
        guard (incoming.storeTimeMilliseconds ?? 0) > 0 else {
            throw LedgerError.invalidArgument(
                "subscription.store_time_ms is missing: states are ordered by the store's time")
        }
        for (value, limit) in [
            (incoming.replacesStoreID, Subscription.Limits.replacesStoreID),
            (incoming.replacedByStoreID, Subscription.Limits.replacedByStoreID),
            (incoming.storeAccountRef, Subscription.Limits.storeAccountRef),
            (incoming.accountID, Subscription.Limits.accountID), (incoming.basePlanID, Subscription.Limits.basePlanID),
            (incoming.offerID, Subscription.Limits.offerID),
            (incoming.autoRenewProductID, Subscription.Limits.autoRenewProductID),
            (incoming.latestOrderID, Subscription.Limits.latestOrderID),
            (incoming.revocationReason, Subscription.Limits.revocationReason),
            (Optional(incoming.bundleOrPackage), Subscription.Limits.bundleOrPackage),
        ] {
            try Ledger.check(value, limit, "subscription.\(limit.field)")
        }
        try Ledger.checkOptional(request.notificationID ?? "", "notification_id", max: Ledger.maxIDBytes)
        for (value, limit) in [
            (incoming.renewalOfferID, Subscription.Limits.renewalOfferID),
            (incoming.storefront, Subscription.Limits.storefront), (incoming.currency, Subscription.Limits.currency),
        ] {
            try Ledger.check(value, limit, "subscription.\(limit.field)")
        }
        let products = Subscription.Limits.renewalOffProductsCount
        guard products.admits(count: incoming.renewalOffProducts.count) else {
            throw LedgerError.invalidArgument(
                "subscription.renewal_off_products has \(incoming.renewalOffProducts.count) entries; at most \(products.maximum)"
            )
        }
        for (index, product) in incoming.renewalOffProducts.enumerated() {
            try Ledger.check(
                product, Subscription.Limits.renewalOffProducts, "subscription.renewal_off_products[\(index)]")
        }
        for (value, field) in [
            (incoming.installmentsCommitted, "installments_committed"),
            (incoming.installmentsRemaining, "installments_remaining"),
        ] where (value ?? 0) < 0 {
            throw LedgerError.invalidArgument("subscription.\(field) is negative")
        }
        // Periods come from the request, never from the state it carries.
        incoming.periods = []
        try Ledger.check(request.periods)
        guard request.events.count <= Ledger.maxEvents else {
            throw LedgerError.invalidArgument(
                "at most \(Ledger.maxEvents) events per request, got \(request.events.count)")
        }
        for (index, event) in request.events.enumerated() {
            guard event.key == incoming.key else {
                throw LedgerError.invalidArgument("events[\(index)].key differs from subscription.key")
            }
            for (value, limit) in [
                (event.rawPayload, LifecycleEvent.Limits.rawPayload),
                (event.storeType, LifecycleEvent.Limits.storeType),
                (event.storeSubtype, LifecycleEvent.Limits.storeSubtype),
                (event.notificationID, LifecycleEvent.Limits.notificationID),
                (event.accountID, LifecycleEvent.Limits.accountID),
                (event.otherAccountID, LifecycleEvent.Limits.otherAccountID),
                (event.detail, LifecycleEvent.Limits.detail),
                (event.rawTransaction, LifecycleEvent.Limits.rawTransaction),
                (event.rawRenewalInfo, LifecycleEvent.Limits.rawRenewalInfo),
            ] {
                try Ledger.check(value, limit, "events[\(index)].\(limit.field)")
            }
        }
        let verifiedAt = transactions.now()
        incoming.verifiedTimeMilliseconds = incoming.verifiedTimeMilliseconds ?? verifiedAt
        let intent = VerifiedStateIntent(
            request: request, subscription: incoming, requestHash: Digest.sha256Hex(request.serialized()),
            verifiedAt: verifiedAt)
        return { tx in
            let store = LedgerStore(tx)
            let plan = try VerifiedStatePlan(intent, rows: try store.verifiedStateRows(intent))
            try store.apply(plan.writes)
            return plan.response
        }
    }

    public func subscription(_ key: SubscriptionKey) async throws -> Subscription {
        try Ledger.check(key, "key")
        let found = try await transactions.read { tx in try LedgerStore(tx).subscriptionRow(key) }
        guard let found else { throw LedgerError.notFound("no subscription \(key)") }
        return found
    }

    /// A subscription's state and, unless `stateOnly`, its latest `maxAnsweredPeriods` recorded
    /// periods, with the raw data, by start.
    public func subscriptionAndPeriods(_ key: SubscriptionKey, stateOnly: Bool = false) async throws
        -> GetSubscriptionResponse
    {
        try Ledger.check(key, "key")
        let found = try await transactions.read { tx in
            try LedgerStore(tx).subscriptionRow(key).map {
                GetSubscriptionResponse(
                    subscription: $0,
                    periods: stateOnly
                        ? [] : try LedgerStore(tx).storedPeriods(key, limit: Ledger.maxAnsweredPeriods, raw: true)
                )
            }
        }
        guard let found else { throw LedgerError.notFound("no subscription \(key)") }
        return found
    }

    /// Lists one store's subscriptions by state and expiry window (or, with `unacknowledged`,
    /// the Google purchases still to acknowledge), ordered by key.
    public func listSubscriptions(_ request: ListSubscriptionsRequest) async throws -> ListSubscriptionsResponse {
        guard let store = request.store else { throw LedgerError.invalidArgument("store is missing") }
        guard !request.unacknowledged || store == .google else {
            throw LedgerError.invalidArgument("unacknowledged lists Google Play purchases only: set store STORE_GOOGLE")
        }
        let size = try Ledger.pageSize(request.pageSize)
        let after = try request.pageToken.map(PairCursor.init(token:))
        return try await transactions.read { tx in
            let found = try LedgerStore(tx).subscriptions(
                store: store, state: request.state, expiresFrom: request.expiresAfterMilliseconds,
                expiresBefore: request.expiresBeforeMilliseconds, unacknowledged: request.unacknowledged, after: after,
                limit: Int(size) + 1)
            let subscriptions = try Ledger.page(min(found.count, Int(size))) { found[$0] }
            var next: String?
            if found.count > subscriptions.count, let last = subscriptions.last {
                next = PairCursor(number: Int64(last.key.environment.rawValue), text: last.key.storeID).token
            }
            return ListSubscriptionsResponse(subscriptions: subscriptions, nextPageToken: next)
        }
    }
}
