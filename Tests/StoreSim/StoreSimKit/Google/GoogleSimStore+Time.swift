import Synchronization

extension GoogleSimStore {
    /// Moves the clock by `offset` ms and lets everything due happen in time order.
    public func advance(by offset: Int64) {
        process(until: clock.now + max(0, offset))
        clock.advance(by: offset)
    }

    /// Lets everything due up to `target` happen, without moving the clock.
    public func process(until target: Int64) {
        state.withLock { state in
            while let (token, due) = nextDue(in: &state, notAfter: target) {
                if state.oneTime[token] != nil {
                    refundUnacknowledged(&state, token, at: due)
                } else {
                    step(&state, token, at: due)
                }
            }
        }
    }

    /// The acknowledgement deadline of a purchase paid first at `charged`.
    func acknowledgementDeadline(charged: Int64, test: Bool) -> Int64 {
        charged
            + (test
                ? configuration.testAcknowledgementWindowMilliseconds : configuration.acknowledgementWindowMilliseconds)
    }

    /// The earliest thing due up to `target`, by time then token (so that equal times go in a
    /// fixed order). The tokens written since the last look are queued again at their due
    /// moments first, and the one returned is looked at again next time (its step changes it).
    private func nextDue(in state: inout State, notAfter target: Int64) -> (String, Int64)? {
        let written = state.purchases.takeWritten().union(state.oneTime.takeWritten())
        let purchases = state.purchases
        let oneTime = state.oneTime
        let due = { (token: String) -> Int64? in
            if let purchase = oneTime[token] { return self.nextMoment(of: purchase) }
            return purchases[token].flatMap { self.nextMoment(of: $0) }
        }
        state.due.schedule(written, due: due)
        guard let (token, moment) = state.due.popFirst(notAfter: target, due: due) else { return nil }
        if oneTime[token] != nil { state.oneTime.noteWritten(token) } else { state.purchases.noteWritten(token) }
        return (token, moment)
    }

    /// When `purchase` next changes by itself: its period's end, grace, hold or pause, or its
    /// acknowledgement deadline when earlier; nil for a revoked or ended one.
    private func nextMoment(of purchase: Purchase) -> Int64? {
        guard purchase.revoked == nil else { return nil }
        var due: Int64?
        switch purchase.phase {
        case .active, .canceled: due = purchase.expiry
        case .grace(let until), .onHold(let until): due = until
        case .paused(let resumeAt): due = resumeAt
        // A deferred token starts when the token it replaces reaches its end (that one's step).
        case .expired, .pending, .pendingCanceled, .deferred: due = nil
        }
        if !purchase.acknowledged, purchase.live, let first = purchase.orders.first {
            due = min(due ?? .max, acknowledgementDeadline(charged: first.chargedAt, test: purchase.test))
        }
        return due
    }

    /// When a one-time purchase nobody acknowledged is refunded; nil for any other.
    private func nextMoment(of purchase: OneTimePurchase) -> Int64? {
        guard purchase.purchaseState == 0, !purchase.acknowledged, !purchase.consumed else { return nil }
        return purchase.order.map { acknowledgementDeadline(charged: $0.chargedAt, test: purchase.test) }
    }

    private func step(_ state: inout State, _ token: String, at now: Int64) {
        let purchase = state.purchases[token]!
        if !purchase.acknowledged, let first = purchase.orders.first,
            now >= acknowledgementDeadline(charged: first.chargedAt, test: purchase.test)
        {
            // Nobody acknowledged it: Google refunds and revokes it (voidedReason 8,
            // unacknowledged purchase).
            return revoke(&state, token, orderIndex: purchase.orders.count - 1, at: now, source: 2, reason: 8)
        }
        switch purchase.phase {
        case .canceled:
            end(&state, token, at: now, ending: purchase.ending)
            emit(&state, token, 13, at: now)
        case .active where purchase.prepaid:
            // A prepaid plan runs out: EXPIRED (nothing was cancelled, so no cancellation context).
            end(&state, token, at: now, ending: nil)
            emit(&state, token, 13, at: now)
        case .active where purchase.deferredReplacement != nil:
            switchDeferred(&state, from: token, at: now)
        case .active where !purchase.renews:
            end(&state, token, at: now, ending: purchase.ending ?? .user(at: now))
            emit(&state, token, 13, at: now)
        case .active where purchase.paymentFails:
            state.purchases[token]!.ending = nil
            if configuration.gracePeriodDays > 0 {
                // In grace Play moves expiryTime to the grace end; latestOrderId names the renewal
                // order being retried, latestSuccessfulOrderId still the last paid one.
                let until = now + Int64(configuration.gracePeriodDays) * 86_400_000
                state.purchases[token]!.phase = .grace(until: until)
                state.purchases[token]!.failedRenewal = purchase.expiry
                state.purchases[token]!.expiry = until
                emit(&state, token, 6, at: now)
            } else {
                state.purchases[token]!.phase = .onHold(until: now + Int64(configuration.accountHoldDays) * 86_400_000)
                emit(&state, token, 5, at: now)
            }
        case .active:
            if let length = purchase.scheduledPause {
                state.purchases[token]!.scheduledPause = nil
                state.purchases[token]!.phase = .paused(resumeAt: now + length)
                emit(&state, token, 10, at: now)
            } else {
                // Items whose renewal was turned off are not renewed: they leave lineItems now.
                state.purchases[token]!.items.removeAll { !$0.autoRenew }
                do {
                    try charge(&state.purchases[token]!, at: now, from: now)
                    emit(&state, token, 2, at: now)
                } catch {
                    expire(&state, token, at: now)
                }
            }
        case .grace:
            state.purchases[token]!.phase = .onHold(until: now + Int64(configuration.accountHoldDays) * 86_400_000)
            emit(&state, token, 5, at: now)
        case .onHold:
            end(&state, token, at: now, ending: .system)
            emit(&state, token, 13, at: now)
        case .paused:
            do {
                try resumeNow(&state, token, at: now)
            } catch {
                expire(&state, token, at: now)
            }
        case .expired, .pending, .pendingCanceled, .deferred:
            break
        }
    }

    /// The deferred plan change takes effect at the old period's end: the new token gets its first
    /// order and a period from now, the old one expires, replaced.
    private func switchDeferred(_ state: inout State, from token: String, at now: Int64) {
        let next = state.purchases[token]!.deferredReplacement!
        state.purchases[token]!.deferredReplacement = nil
        do {
            try charge(&state.purchases[next]!, at: now, from: now)
        } catch {
            state.purchases[next]!.phase = .expired
            state.purchases[next]!.ending = .system
            return expire(&state, token, at: now)
        }
        // SUBSCRIPTION_PURCHASED, not RENEWED: the new token's first order is an initial order
        // (`GPA.…` with no `..N`), and a renewal is a later order of a token already paid for;
        // so a backend that never saw the token before (nothing was sent at the change) is told
        // of a purchase.
        emit(&state, next, 4, at: now)
        replace(&state, token, at: now)
        emit(&state, token, 13, at: now)
    }

    /// `token` ends now (its product is no longer sold): EXPIRED.
    private func expire(_ state: inout State, _ token: String, at now: Int64) {
        end(&state, token, at: now, ending: .system)
        emit(&state, token, 13, at: now)
    }
}
