import Crypto
import Foundation
import Model
public import Wire

/// Verified states: the checks of a request, then its write (idempotency, the merge rules of `StateMerge`, periods, the replaced purchase, the change).
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
        let hash = Digest.sha256Hex(request.serialized())
        let verifiedAt = now()
        incoming.verifiedTimeMilliseconds = incoming.verifiedTimeMilliseconds ?? verifiedAt
        let subscription = incoming
        return { tx in
            let key = subscription.key
            // One round trip for what the write depends on: the idempotency record, the
            // current state, the link and (for the first write of a batch) the newest position.
            let lookup = try tx.query(
                """
                SELECT (SELECT request_hash FROM idempotency WHERE idempotency_key = $1) AS request_hash,
                       (SELECT response FROM idempotency WHERE idempotency_key = $1) AS response,
                       (SELECT state FROM subscriptions WHERE store = $2 AND environment = $3 AND store_id = $4) AS state,
                       (SELECT account_id FROM links WHERE store = $2 AND environment = $3 AND store_id = $4) AS account_id,
                       (SELECT COALESCE(MAX(position), 0) FROM changes) AS last_position
                """, [.text(request.idempotencyKey)] + Self.keyParameters(key))
            if tx.batch.lastPosition == nil, let last = lookup.int(0, "last_position") {
                tx.batch.lastPosition = UInt64(last)
            }
            if let storedHash = lookup.text(0, "request_hash") {
                var response = try Self.replayed(
                    request.idempotencyKey, storedHash, hash, lookup.blob(0, "response"),
                    as: RecordVerifiedStateResponse.self)
                response.replayed = true
                // The same evidence processed again (an operator's replay, a retry whose commit
                // landed): the notification it resolves ends processed all the same.
                if let notificationID = request.notificationID {
                    try Self.markProcessed(tx, store: key.store, notificationID: notificationID)
                }
                return response
            }
            let current = try lookup.blob(0, "state").map { try Self.decode(Subscription.self, $0) }
            let linked = lookup.text(0, "account_id")
            // A purchase that replaced another (Google linkedPurchaseToken) continues its
            // owner's subscription: without a link of its own it takes the replaced one's.
            let replacedKey = subscription.replacesStoreID.map {
                SubscriptionKey(store: key.store, environment: key.environment, storeID: $0)
            }
            var inherited: String?
            if let replacedKey, linked == nil {
                inherited = try Self.linkedAccount(tx, replacedKey)
            }
            let account = linked ?? current?.accountID ?? inherited
            let next = StateMerge.candidate(subscription, current: current, account: account)
            let applied = StateMerge.applies(next, over: current, partial: request.partial)
            var recordedPeriods = try Self.recordPeriods(tx, key, request.periods)
            var replacedCut: [Period]?
            if applied, key.store == .google, let replacedKey, let periods = recordedPeriods {
                // Play issues a deferred change's token at the change, with no paid order until
                // the old period ends: a replacement first recorded without periods is deferred.
                let deferred = current.map { $0.replacesStoreID == replacedKey.storeID && $0.periods.isEmpty } ?? false
                (recordedPeriods, replacedCut) = try Self.replacement(
                    tx, key, periods, replacing: replacedKey, deferred: deferred)
            }
            let position = try Self.nextPosition(tx)
            // Derived with the ownership of the state that is stored, as a later pass under newer
            // rules derives them again (`deriveAccessAgain`).
            let ownership = StateMerge.standing(next: next, current: current, applied: applied).ownership
            let intervals = try Self.recordStateFact(
                tx, subscription, events: request.events, partial: request.partial,
                known: current?.statusIntervals ?? [])
            let (state, saves) = StateMerge.result(
                next: next, current: current, applied: applied,
                accessPeriods: recordedPeriods.map { Self.accessPeriods($0, of: key, ownership: ownership) },
                statusIntervals: intervals)
            var events: [LifecycleEvent] = []
            for var event in request.events {
                event.position = position
                event.accountID = event.accountID ?? account
                event.verifiedTimeMilliseconds = event.verifiedTimeMilliseconds ?? verifiedAt
                if event.state == nil { event.state = subscription.state }
                events.append(event)
            }
            if saves { try Self.saveSubscription(tx, state, position: position) }
            for event in events { try Self.insertEvent(tx, event) }
            // A link taken over from the replaced purchase travels in the same change.
            let inheritedLink = inherited.map {
                AccountLink(
                    accountID: $0, key: key, storeAccountRef: subscription.storeAccountRef,
                    linkedTimeMilliseconds: verifiedAt)
            }
            try Self.appendChange(
                tx,
                Change(
                    position: position, committedTimeMilliseconds: verifiedAt, kind: .subscription,
                    subscription: state, link: inheritedLink, events: events.map(Self.withoutRawData)))
            if let inherited {
                try tx.query(
                    """
                    INSERT INTO links (store, environment, store_id, account_id, store_account_ref, linked_ms)
                    VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (store, environment, store_id) DO NOTHING
                    """,
                    Self.keyParameters(key) + [.text(inherited), .text(subscription.storeAccountRef), .int(verifiedAt)])
            }
            // The replaced purchase records what replaced it (and where its access ends), in a
            // change of its own.
            if applied, let replacedKey, var replaced = try Self.subscriptionRow(tx, replacedKey),
                replaced.replacedByStoreID != key.storeID || replacedCut != nil
            {
                replaced.replacedByStoreID = key.storeID
                if let replacedCut {
                    replaced.periods = Self.accessPeriods(replacedCut, of: replacedKey, ownership: replaced.ownership)
                }
                try Self.saveStateChange(tx, replaced, at: verifiedAt)
            }
            if let notificationID = request.notificationID {
                try Self.markProcessed(tx, store: key.store, notificationID: notificationID)
            }
            let response = RecordVerifiedStateResponse(
                subscription: state, applied: applied, replayed: false, position: position)
            try Self.remember(tx, request.idempotencyKey, hash, response, at: verifiedAt)
            return response
        }
    }
}
