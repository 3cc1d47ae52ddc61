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
        try Ledger.check(request.idempotencyKey, "idempotency_key", max: Ledger.maxIdempotencyKeyBytes)
        guard var incoming = request.subscription else { throw LedgerError.invalidArgument("subscription is missing") }
        try Ledger.check(incoming.key, "subscription.key")
        try Ledger.checkSold(incoming.key.store, "subscription.key.store")
        try Ledger.check(incoming.productID, "subscription.product_id", max: Ledger.maxIDBytes)
        guard incoming.state != nil else { throw LedgerError.invalidArgument("subscription.state is missing") }
        guard (incoming.storeTimeMilliseconds ?? 0) > 0 else {
            throw LedgerError.invalidArgument(
                "subscription.store_time_ms is missing: states are ordered by the store's time")
        }
        for (value, field) in [
            (incoming.replacesStoreID, "replaces_store_id"), (incoming.replacedByStoreID, "replaced_by_store_id"),
            (incoming.storeAccountRef, "store_account_ref"), (incoming.accountID, "account_id"),
            (incoming.basePlanID, "base_plan_id"), (incoming.offerID, "offer_id"),
            (incoming.autoRenewProductID, "auto_renew_product_id"), (incoming.latestOrderID, "latest_order_id"),
            (incoming.revocationReason, "revocation_reason"), (Optional(incoming.bundleOrPackage), "bundle_or_package"),
            (request.notificationID, "notification_id"),
        ] {
            try Ledger.checkOptional(
                value ?? "", field == "notification_id" ? field : "subscription.\(field)", max: Ledger.maxIDBytes)
        }
        for (value, field) in [
            (incoming.renewalOfferID, "renewal_offer_id"), (incoming.storefront, "storefront"),
            (incoming.currency, "currency"),
        ] {
            try Ledger.checkOptional(value ?? "", "subscription.\(field)", max: Ledger.maxIDBytes)
        }
        guard incoming.renewalOffProducts.count <= 50 else {
            throw LedgerError.invalidArgument(
                "subscription.renewal_off_products has \(incoming.renewalOffProducts.count) entries; at most 50")
        }
        for (index, product) in incoming.renewalOffProducts.enumerated() {
            try Ledger.check(product, "subscription.renewal_off_products[\(index)]", max: Ledger.maxIDBytes)
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
            try Ledger.checkOptional(
                event.rawPayload ?? "", "events[\(index)].raw_payload", max: Ledger.maxPayloadBytes)
            for (value, field) in [
                (event.storeType, "store_type"), (event.storeSubtype, "store_subtype"),
                (event.notificationID, "notification_id"), (event.accountID, "account_id"),
                (event.otherAccountID, "other_account_id"),
            ] {
                try Ledger.checkOptional(value ?? "", "events[\(index)].\(field)", max: Ledger.maxIDBytes)
            }
            try Ledger.checkOptional(event.detail ?? "", "events[\(index)].detail", max: Ledger.maxErrorBytes)
            try Ledger.checkOptional(
                event.rawTransaction ?? "", "events[\(index)].raw_transaction", max: Ledger.maxPayloadBytes)
            try Ledger.checkOptional(
                event.rawRenewalInfo ?? "", "events[\(index)].raw_renewal_info", max: Ledger.maxPayloadBytes)
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

    /// Lists one store's subscriptions by state and expiry window, ordered by key.
    public func listSubscriptions(_ request: ListSubscriptionsRequest) async throws -> ListSubscriptionsResponse {
        guard let store = request.store else { throw LedgerError.invalidArgument("store is missing") }
        let size = try Ledger.pageSize(request.pageSize)
        let after = try request.pageToken.map(PairCursor.init(token:))
        return try await transactions.read { tx in
            let found = try LedgerStore(tx).subscriptions(
                store: store, state: request.state, expiresFrom: request.expiresAfterMilliseconds,
                expiresBefore: request.expiresBeforeMilliseconds, after: after, limit: Int(size) + 1)
            let subscriptions = try Ledger.page(min(found.count, Int(size))) { found[$0] }
            var next: String?
            if found.count > subscriptions.count, let last = subscriptions.last {
                next = PairCursor(number: Int64(last.key.environment.rawValue), text: last.key.storeID).token
            }
            return ListSubscriptionsResponse(subscriptions: subscriptions, nextPageToken: next)
        }
    }
}
