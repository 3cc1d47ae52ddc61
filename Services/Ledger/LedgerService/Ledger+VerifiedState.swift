import Crypto
import Foundation
import Model
public import Wire

/// Verified states: the checks of a request, then its write: the rows it depends on
/// (`LedgerStore.verifiedStateRows`), the plan of its rules (`VerifiedStatePlan`), the plan applied.
extension Ledger {
    /// Records a verified state and its events. Idempotent by key: a retry answers the first
    /// response with `replayed`; the same key with other content is FAILED_PRECONDITION. A state
    /// older (by store time) than the one applied goes to history only (`applied = false`).
    public func recordVerifiedState(_ request: RecordVerifiedStateRequest) async throws -> RecordVerifiedStateResponse {
        try await write(try recordVerifiedStateWrite(request))
    }

    /// `recordVerifiedState` checked and ready for the writer (which runs the returned body).
    func recordVerifiedStateWrite(_ request: RecordVerifiedStateRequest) throws -> WriteBody<
        RecordVerifiedStateResponse
    > {
        try Self.check(request.idempotencyKey, "idempotency_key", max: Self.maxIdempotencyKeyBytes)
        guard var incoming = request.subscription else { throw LedgerError.invalidArgument("subscription is missing") }
        try Self.check(incoming.key, "subscription.key")
        try Self.checkSold(incoming.key.store, "subscription.key.store")
        try Self.check(incoming.productID, "subscription.product_id", max: Self.maxIDBytes)
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
            try Self.checkOptional(
                value ?? "", field == "notification_id" ? field : "subscription.\(field)", max: Self.maxIDBytes)
        }
        for (value, field) in [
            (incoming.renewalOfferID, "renewal_offer_id"), (incoming.storefront, "storefront"),
            (incoming.currency, "currency"),
        ] {
            try Self.checkOptional(value ?? "", "subscription.\(field)", max: Self.maxIDBytes)
        }
        guard incoming.renewalOffProducts.count <= 50 else {
            throw LedgerError.invalidArgument(
                "subscription.renewal_off_products has \(incoming.renewalOffProducts.count) entries; at most 50")
        }
        for (index, product) in incoming.renewalOffProducts.enumerated() {
            try Self.check(product, "subscription.renewal_off_products[\(index)]", max: Self.maxIDBytes)
        }
        for (value, field) in [
            (incoming.installmentsCommitted, "installments_committed"),
            (incoming.installmentsRemaining, "installments_remaining"),
        ] where (value ?? 0) < 0 {
            throw LedgerError.invalidArgument("subscription.\(field) is negative")
        }
        // Periods come from the request, never from the state it carries.
        incoming.periods = []
        try Self.check(request.periods)
        guard request.events.count <= Self.maxEvents else {
            throw LedgerError.invalidArgument(
                "at most \(Self.maxEvents) events per request, got \(request.events.count)")
        }
        for (index, event) in request.events.enumerated() {
            guard event.key == incoming.key else {
                throw LedgerError.invalidArgument("events[\(index)].key differs from subscription.key")
            }
            try Self.checkOptional(event.rawPayload ?? "", "events[\(index)].raw_payload", max: Self.maxPayloadBytes)
            for (value, field) in [
                (event.storeType, "store_type"), (event.storeSubtype, "store_subtype"),
                (event.notificationID, "notification_id"), (event.accountID, "account_id"),
                (event.otherAccountID, "other_account_id"),
            ] {
                try Self.checkOptional(value ?? "", "events[\(index)].\(field)", max: Self.maxIDBytes)
            }
            try Self.checkOptional(event.detail ?? "", "events[\(index)].detail", max: Self.maxErrorBytes)
            try Self.checkOptional(
                event.rawTransaction ?? "", "events[\(index)].raw_transaction", max: Self.maxPayloadBytes)
            try Self.checkOptional(
                event.rawRenewalInfo ?? "", "events[\(index)].raw_renewal_info", max: Self.maxPayloadBytes)
        }
        let verifiedAt = now()
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
}
