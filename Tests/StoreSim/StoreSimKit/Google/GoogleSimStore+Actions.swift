import Synchronization

/// What a developer's backend does to a purchase through the Play Developer API: revoke a
/// subscription with a refund (`purchases.subscriptionsv2.revoke`), refund an order
/// (`orders.refund`), defer a renewal (`purchases.subscriptions.defer`), cancel a subscription
/// (`purchases.subscriptionsv2.cancel`). Each refuses what Play refuses with Play's status and
/// status name (400 `FAILED_PRECONDITION` for a purchase or order not eligible, 400
/// `INVALID_ARGUMENT` for a malformed request, 404 `NOT_FOUND` for an unknown token or order), and
/// sends the notifications the change causes. Where Play's rules are not written down, the
/// simulator refuses (the harsher reading), as noted at each.
extension GoogleSimStore {
    /// `cancellationContext.cancellationType` of `purchases.subscriptionsv2.cancel`.
    enum CancellationType: String {
        /// The subscriber asked; they may restore it before it ends.
        case userRequested = "USER_REQUESTED_STOP_RENEWALS"
        /// The developer stops payments; it cannot be restored.
        case developerRequested = "DEVELOPER_REQUESTED_STOP_PAYMENTS"
    }

    /// The oldest order Play refunds: 3 years.
    static let refundableAge: Int64 = 3 * 365 * 86_400_000
    /// The shortest and longest deferral in one call: one day, one year.
    static let deferralRange: ClosedRange<Int64> = 86_400_000...(365 * 86_400_000)

    /// `purchases.subscriptionsv2.revoke`: the current order is refunded (in full or pro rata)
    /// and voided, the subscription ends now (EXPIRED, RTDN 12 then 13, a voided purchase).
    /// Refuses a subscription without access now (expired, pending, on hold, paused): Play does
    /// not document revoking those; the simulator refuses.
    func revokeByDeveloper(_ token: String) throws(GoogleAPICall.Failure) {
        try act { state, now throws(GoogleAPICall.Failure) in
            let purchase = try Self.known(token, in: state)
            switch purchase.phase {
            case .active, .canceled, .grace: break
            default: throw Self.notEligible("The subscription is not active and cannot be revoked.")
            }
            guard purchase.revoked == nil, let current = purchase.orders.indices.last,
                purchase.orders[current].voidedAt == nil
            else { throw Self.notEligible("The subscription is not active and cannot be revoked.") }
            state.purchases[token]!.orders[current].refundedAt = now
            revoke(&state, token, orderIndex: current, at: now, source: 1, reason: 0)
            state.purchases[token]!.ending = .developer
        }
    }

    /// `orders.refund` of `orderID`, of a subscription (any of its orders: the first, a renewal,
    /// a top-up) or of a one-time purchase. Only that order is refunded. With `revoke`, access
    /// ends now: a live subscription is revoked (RTDN 12 then 13), a one-time purchase cancelled,
    /// and the order is voided (listed and notified); without it, access stays and nothing is
    /// listed or notified (Play lists only revoked orders as voided). Refuses an order already
    /// refunded or voided, and one charged more than 3 years ago.
    func refundOrder(_ orderID: String, revoke: Bool) throws(GoogleAPICall.Failure) {
        try act { state, now throws(GoogleAPICall.Failure) in
            if let (token, purchase) = state.oneTime.first(where: { $0.value.order?.id == orderID }) {
                let order = purchase.order!
                try Self.refundable(order, now: now)
                state.oneTime[token]!.order!.refundedAt = now
                if revoke { voidOneTime(&state, token, units: nil, revoke: true, at: now, source: 1, reason: 0) }
                return
            }
            for (token, purchase) in state.purchases {
                guard let index = purchase.orders.firstIndex(where: { $0.id == orderID }) else { continue }
                try Self.refundable(purchase.orders[index], now: now)
                state.purchases[token]!.orders[index].refundedAt = now
                guard revoke else { return }
                if purchase.live, purchase.revoked == nil {
                    // Play: with revoke "access to the subscription … will be terminated
                    // immediately", whichever of its orders is refunded.
                    self.revoke(&state, token, orderIndex: index, at: now, source: 1, reason: 0)
                    state.purchases[token]!.ending = .developer
                } else {
                    voidSubscriptionOrder(&state, token, orderIndex: index, at: now, source: 1, reason: 0)
                }
                return
            }
            throw GoogleAPICall.Failure.google(404, "NOT_FOUND", "No order was found for the given order ID.")
        }
    }

    /// `purchases.subscriptions.defer` of the subscription `productID` of `token`: the expiry
    /// moves from `expected` (which must be the current one) to `desired`, one day to one year
    /// later; the next renewal comes then (RTDN 9). Only an active, renewing, not prepaid
    /// subscription is deferred: Play does not say it defers a cancelled one; the simulator
    /// refuses. Returns the new expiry.
    func deferRenewal(_ token: String, productID: String, expected: Int64, desired: Int64)
        throws(GoogleAPICall.Failure) -> Int64
    {
        try act { state, now throws(GoogleAPICall.Failure) in
            let purchase = try Self.known(token, in: state)
            guard purchase.items.contains(where: { $0.productID == productID }) else {
                throw .google(400, "INVALID_ARGUMENT", "The subscription purchase is not of \(productID).")
            }
            guard purchase.phase == .active, purchase.renews, !purchase.prepaid, purchase.deferredReplacement == nil
            else { throw Self.notEligible("The subscription is not active and renewing; it cannot be deferred.") }
            guard expected == purchase.expiry else {
                throw Self.notEligible(
                    "The expected expiry time \(expected) does not match the current expiry time \(purchase.expiry).")
            }
            guard Self.deferralRange.contains(desired - expected) else {
                throw .google(
                    400, "INVALID_ARGUMENT",
                    "The desired expiry time must be 1 day to 1 year after the current expiry time.")
            }
            state.purchases[token]!.expiry = desired
            emit(&state, token, 9, at: now)
            return desired
        }
    }

    /// `purchases.subscriptionsv2.cancel`: renewal off for every line item, access to the
    /// period's end (RTDN 3); `type` says who asked (`canceledStateContext`). Refuses a
    /// subscription that is not active and renewing (already cancelled, expired, prepaid).
    func cancelByDeveloper(_ token: String, type: CancellationType) throws(GoogleAPICall.Failure) {
        try act { state, now throws(GoogleAPICall.Failure) in
            let purchase = try Self.known(token, in: state)
            guard purchase.phase == .active, purchase.renews, !purchase.prepaid, purchase.deferredReplacement == nil
            else { throw Self.notEligible("The subscription is not active and renewing; it cannot be cancelled.") }
            cancelRenewal(&state, token, at: now, ending: type == .userRequested ? .user(at: now) : .developer)
        }
    }

    // MARK: Helpers

    /// Play's answer for a purchase or order the call does not apply to.
    static func notEligible(_ message: String) -> GoogleAPICall.Failure {
        .google(400, "FAILED_PRECONDITION", message)
    }

    static func known(_ token: String, in state: State) throws(GoogleAPICall.Failure) -> Purchase {
        guard let purchase = state.purchases[token] else {
            throw .google(404, "NOT_FOUND", "The purchase token was not found.")
        }
        return purchase
    }

    /// Refuses an order refunded or voided before, or charged more than 3 years before `now`.
    static func refundable(_ order: Order, now: Int64) throws(GoogleAPICall.Failure) {
        guard order.refundedAt == nil, order.voidedAt == nil else {
            throw notEligible("The order has already been refunded.")
        }
        guard now - order.chargedAt <= refundableAge else {
            throw notEligible("Orders older than 3 years cannot be refunded.")
        }
    }

    private func act<T>(_ body: (inout State, Int64) throws(GoogleAPICall.Failure) -> T)
        throws(GoogleAPICall.Failure) -> T
    {
        let now = clock.now
        return try state.withLock { state throws(GoogleAPICall.Failure) -> T in try body(&state, now) }
    }
}
