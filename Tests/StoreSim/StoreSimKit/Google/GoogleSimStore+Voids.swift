import Synchronization

extension GoogleSimStore {
    /// Google refunds the purchase and revokes it now: its current order is voided, a
    /// subscription reads EXPIRED (RTDN 12 then 13), a one-time purchase is cancelled. Throws
    /// `.notFound` for an unknown token, `.conflict` for one already refunded or never paid.
    public func refund(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            if let purchase = state.oneTime[token] {
                guard let order = purchase.order, order.voidedAt == nil else {
                    throw SimError(.conflict, "the purchase is already refunded or not paid")
                }
                return voidOneTime(&state, token, units: nil, revoke: true, at: now, source: 2, reason: 0)
            }
            let purchase = try Self.purchase(token, in: state)
            guard purchase.revoked == nil, let current = purchase.orders.indices.last,
                purchase.orders[current].voidedAt == nil
            else { throw SimError(.conflict, "the purchase is already refunded or not paid") }
            revoke(&state, token, orderIndex: current, at: now, source: 2, reason: 0)
        }
    }

    /// Voids the order `orderID`, of a subscription (its first order, any renewal or top-up) or
    /// of a one-time purchase: a voided purchases entry and a `voidedPurchaseNotification`.
    ///
    /// `refundType` 1 refunds the whole order; with `revoke` the current order of a subscription
    /// revokes it now (RTDN 12 then 13, EXPIRED with `expiryTime` now), a one-time purchase is
    /// cancelled. A past renewal's void leaves the current period alone. `refundType` 2 refunds
    /// `quantity` units of a one-time purchase bought in a quantity above 1: it stays owned while
    /// units remain. `source` and `reason` are Google's `voidedSource` and `voidedReason`.
    /// Throws `.notFound` for an unknown order, `.badRequest` for a refund that does not fit it,
    /// `.conflict` for an order already voided.
    public func void(
        orderID: String, refundType: Int = 1, quantity: Int? = nil, revoke: Bool, source: Int = 1, reason: Int = 0
    ) throws(SimError) {
        guard refundType == 1 || refundType == 2 else {
            throw SimError(.badRequest, "refundType is 1 (full) or 2 (quantity-based partial)")
        }
        try change { state, now throws(SimError) in
            if let (token, purchase) = state.oneTime.first(where: { $0.value.order?.id == orderID }) {
                let order = purchase.order!
                guard order.voidedAt == nil else { throw SimError(.conflict, "the order is already voided") }
                if refundType == 2 {
                    let left = order.quantity - order.voidedQuantity
                    guard order.quantity > 1, let quantity, (1...left).contains(quantity) else {
                        throw SimError(
                            .badRequest, "a partial refund is of 1 to \(left) units of a purchase of more than one")
                    }
                    return voidOneTime(
                        &state, token, units: quantity, revoke: revoke, at: now, source: source, reason: reason)
                }
                guard quantity == nil else { throw SimError(.badRequest, "a full refund names no quantity") }
                return voidOneTime(&state, token, units: nil, revoke: revoke, at: now, source: source, reason: reason)
            }
            for (token, purchase) in state.purchases {
                guard let index = purchase.orders.firstIndex(where: { $0.id == orderID }) else { continue }
                guard refundType == 1, quantity == nil else {
                    throw SimError(.badRequest, "a subscription order is refunded in full (refundType 1)")
                }
                guard purchase.orders[index].voidedAt == nil else {
                    throw SimError(.conflict, "the order is already voided")
                }
                if revoke, index == purchase.orders.count - 1, purchase.live, purchase.revoked == nil {
                    return self.revoke(&state, token, orderIndex: index, at: now, source: source, reason: reason)
                }
                return voidSubscriptionOrder(&state, token, orderIndex: index, at: now, source: source, reason: reason)
            }
            throw SimError(.notFound, "no order \(orderID)")
        }
    }

    /// Voided purchases in [start, end] (`endTime` is "the newest voided purchase that you want to
    /// see"), oldest first.
    func voided(from start: Int64, to end: Int64) -> [Voided] {
        state.withLock { $0.voided.filter { $0.voidedTime >= start && $0.voidedTime <= end } }
    }

    // MARK: Changes

    /// Revokes the subscription `token` now by voiding its current order: EXPIRED with
    /// `expiryTime` now and `systemInitiatedCancellation`, RTDN 12 and then 13 (both read that
    /// state), then the voided purchase notification. A deferred plan change it waited for is
    /// dropped.
    func revoke(_ state: inout State, _ token: String, orderIndex: Int, at now: Int64, source: Int, reason: Int) {
        let purchase = state.purchases[token]!
        end(&state, token, at: now, ending: .system)
        state.purchases[token]!.revoked = now
        if let next = purchase.deferredReplacement {
            state.purchases[token]!.deferredReplacement = nil
            state.purchases[next]!.phase = .expired
            state.purchases[next]!.ending = .system
        }
        // Play sends SUBSCRIPTION_REVOKED and then SUBSCRIPTION_EXPIRED (the recorded scenarios
        // show both, two seconds apart, reading the same EXPIRED state).
        emit(&state, token, 12, at: now)
        emit(&state, token, 13, at: now)
        voidSubscriptionOrder(&state, token, orderIndex: orderIndex, at: now, source: source, reason: reason)
    }

    func voidSubscriptionOrder(
        _ state: inout State, _ token: String, orderIndex: Int, at now: Int64, source: Int, reason: Int
    ) {
        let order = state.purchases[token]!.orders[orderIndex]
        state.purchases[token]!.orders[orderIndex].voidedAt = now
        state.purchases[token]!.orders[orderIndex].voidedQuantity = order.quantity
        state.voided.append(
            Voided(
                token: token, orderID: order.id, purchaseTime: order.chargedAt, voidedTime: now, productType: 1,
                refundType: 1, voidedQuantity: nil, source: source, reason: reason))
        emitVoided(&state, token, orderID: order.id, productType: 1, refundType: 1, at: now)
    }

    /// Voids `units` of the one-time purchase `token` (nil: the whole order). It reads cancelled
    /// once no unit is left, or on a full refund with `revoke`.
    func voidOneTime(
        _ state: inout State, _ token: String, units: Int?, revoke: Bool, at now: Int64, source: Int, reason: Int
    ) {
        var purchase = state.oneTime[token]!
        guard var order = purchase.order else { return }
        order.voidedQuantity = units.map { order.voidedQuantity + $0 } ?? order.quantity
        if order.voidedQuantity >= order.quantity { order.voidedAt = now }
        if units == nil ? revoke : order.voidedAt != nil { purchase.purchaseState = 1 }
        purchase.order = order
        state.oneTime[token] = purchase
        state.voided.append(
            Voided(
                token: token, orderID: order.id, purchaseTime: order.chargedAt, voidedTime: now, productType: 2,
                refundType: units == nil ? 1 : 2, voidedQuantity: units, source: source, reason: reason))
        emitVoided(&state, token, orderID: order.id, productType: 2, refundType: units == nil ? 1 : 2, at: now)
    }
}
