import Model
import Wire

/// A `RecordVerifiedState` request as checked: the state to record (its periods cleared, its
/// verification time set), the request's hash for idempotency, and when it was verified.
struct VerifiedStateIntent: Sendable {
    let request: RecordVerifiedStateRequest
    let subscription: Subscription
    let requestHash: String
    let verifiedAt: Int64

    var key: SubscriptionKey { subscription.key }

    /// The purchase this one replaced (Google linkedPurchaseToken), when it names one.
    var replacedKey: SubscriptionKey? {
        subscription.replacesStoreID.map {
            SubscriptionKey(store: key.store, environment: key.environment, storeID: $0)
        }
    }
}

/// An idempotency record as stored: the hash of the request that used the key, and its answer.
struct IdempotencyRecord: Sendable, Equatable {
    let requestHash: String
    let response: [UInt8]?
}

/// What a verified state's write depends on, read in one transaction before the plan is made.
struct VerifiedStateRows: Sendable, Equatable {
    /// The request's idempotency key as recorded, nil when unused.
    var idempotency: IdempotencyRecord?
    /// The subscription's stored state.
    var current: Subscription?
    /// The account the subscription is linked to.
    var linkedAccount: String?
    /// The replaced purchase's stored state and linked account, when the state names one.
    var replaced: Subscription?
    var replacedLinkedAccount: String?
    /// Recorded periods (as stored, without raw data) of the subscriptions `VerifiedStatePlan.reads`
    /// names.
    var periods: [SubscriptionKey: [Period]] = [:]
    /// The subscription's recorded state facts, when `VerifiedStatePlan.reads` asks for them.
    var facts: [StateFact]?
    /// The newest change-feed position of the transaction.
    var lastPosition: UInt64
}

/// The rules of a verified state's write as a pure function of the request and the rows it
/// depends on: idempotent replays, the merge of states by store time (`StateMerge`), the periods
/// joined per store, Google's replacement cut and deferred change, the status intervals of the
/// state facts, the link a replacement inherits, and the changes it all makes. The writes it
/// returns are all the write does; `LedgerStore` reads the rows and applies them.
struct VerifiedStatePlan: Sendable, Equatable {
    var writes: [LedgerWrite]
    var response: RecordVerifiedStateResponse

    /// The rows a plan reads beyond the fixed ones (`LedgerStore.verifiedStateRows`): the
    /// recorded periods of these subscriptions, and whether the state facts.
    struct Reads: Sendable, Equatable {
        var periodsOf: [SubscriptionKey] = []
        var facts = false
    }

    /// What to read, given the fixed rows (`rows` without periods and facts).
    static func reads(_ intent: VerifiedStateIntent, rows: VerifiedStateRows) -> Reads {
        guard rows.idempotency == nil else { return Reads() }
        var reads = Reads()
        if !intent.request.periods.isEmpty {
            reads.periodsOf.append(intent.key)
            if intent.key.store == .google, let replacedKey = intent.replacedKey, rows.replaced != nil,
                replacedKey != intent.key
            {
                reads.periodsOf.append(replacedKey)
            }
        }
        if let fact = stateFact(intent) {
            reads.facts = StatusInterval.isPassing(fact.state) || !(rows.current?.statusIntervals ?? []).isEmpty
        }
        return reads
    }

    /// The fact the state is (not a partial one: one notification's own transaction says
    /// nothing of the state then). Its time is the state's store time (Apple: the newest
    /// `signedDate` of the data the state was read from), but for Play, which signs no time and
    /// whose state's store time is when it was read, the time of the change its first event
    /// names (the notification's `eventTimeMillis`).
    static func stateFact(_ intent: VerifiedStateIntent) -> StateFact? {
        let time = intent.key.store == .google ? intent.request.events.first?.storeTimeMilliseconds : nil
        guard !intent.request.partial else { return nil }
        return StateFact(intent.subscription, time: time)
    }

    /// The write of `intent` over `rows`. Throws FAILED_PRECONDITION when the idempotency key
    /// was used with another request.
    init(_ intent: VerifiedStateIntent, rows: VerifiedStateRows) throws {
        let request = intent.request
        let key = intent.key
        let subscription = intent.subscription
        let verifiedAt = intent.verifiedAt
        var writes: [LedgerWrite] = []
        // The same evidence processed again (an operator's replay, a retry whose commit landed):
        // the notification it resolves ends processed all the same.
        let processed = request.notificationID.map { LedgerWrite.markProcessed(store: key.store, notificationID: $0) }
        if let record = rows.idempotency {
            var response = try Ledger.replayed(
                request.idempotencyKey, record.requestHash, intent.requestHash, record.response,
                as: RecordVerifiedStateResponse.self)
            response.replayed = true
            self.init(writes: processed.map { [$0] } ?? [], response: response)
            return
        }
        let current = rows.current
        // A purchase that replaced another (Google linkedPurchaseToken) continues its owner's
        // subscription: without a link of its own it takes the replaced one's.
        let replacedKey = intent.replacedKey
        let inherited = replacedKey != nil && rows.linkedAccount == nil ? rows.replacedLinkedAccount : nil
        let account = rows.linkedAccount ?? current?.accountID ?? inherited
        let next = StateMerge.candidate(subscription, current: current, account: account)
        let applied = StateMerge.applies(next, over: current, partial: request.partial)
        var periods = PeriodRecord(stored: rows.periods)
        var recordedPeriods = periods.record(key, request.periods)
        var replacedCut: [Period]?
        if applied, key.store == .google, let replacedKey, let recorded = recordedPeriods {
            // Play issues a deferred change's token at the change, with no paid order until the
            // old period ends: a replacement first recorded without periods is deferred.
            let deferred = current.map { $0.replacesStoreID == replacedKey.storeID && $0.periods.isEmpty } ?? false
            let replacedExists = replacedKey == key ? current != nil : rows.replaced != nil
            (recordedPeriods, replacedCut) = periods.replacement(
                key, recorded, replacing: replacedKey, replacedExists: replacedExists, deferred: deferred)
        }
        writes += periods.writes
        let position = rows.lastPosition + 1
        // Derived with the ownership of the state that is stored, as a later pass under newer
        // rules derives them again (`deriveAccessAgain`).
        let ownership = StateMerge.standing(next: next, current: current, applied: applied).ownership
        var intervals: [StatusInterval]?
        if let fact = Self.stateFact(intent) {
            writes.append(.recordStateFact(key, fact))
            if let stored = rows.facts,
                StatusInterval.isPassing(fact.state) || !(current?.statusIntervals ?? []).isEmpty
            {
                intervals = StateFact.intervals(Set(stored).union([fact]))
            }
        }
        let (state, saves) = StateMerge.result(
            next: next, current: current, applied: applied,
            accessPeriods: recordedPeriods.map { PeriodRecord.accessPeriods($0, of: key, ownership: ownership) },
            statusIntervals: intervals)
        let events = request.events.map { received -> LifecycleEvent in
            var event = received
            event.position = position
            event.accountID = event.accountID ?? account
            event.verifiedTimeMilliseconds = event.verifiedTimeMilliseconds ?? verifiedAt
            if event.state == nil { event.state = subscription.state }
            return event
        }
        if saves { writes.append(.saveSubscription(state, position: position)) }
        writes += events.map(LedgerWrite.insertEvent)
        // A link taken over from the replaced purchase travels in the same change.
        let inheritedLink = inherited.map {
            AccountLink(
                accountID: $0, key: key, storeAccountRef: subscription.storeAccountRef,
                linkedTimeMilliseconds: verifiedAt)
        }
        writes.append(
            .appendChange(
                Change(
                    position: position, committedTimeMilliseconds: verifiedAt, kind: .subscription,
                    subscription: state, link: inheritedLink, events: events.map(Ledger.withoutRawData))))
        if let inheritedLink { writes.append(.insertLink(inheritedLink)) }
        // The replaced purchase records what replaced it (and where its access ends), in a
        // change of its own.
        let replacedNow = replacedKey == key ? (saves ? state : current) : rows.replaced
        if applied, let replacedKey, var replaced = replacedNow,
            replaced.replacedByStoreID != key.storeID || replacedCut != nil
        {
            replaced.replacedByStoreID = key.storeID
            if let replacedCut {
                replaced.periods = PeriodRecord.accessPeriods(
                    replacedCut, of: replacedKey, ownership: replaced.ownership)
            }
            writes.append(.saveSubscription(replaced, position: position + 1))
            writes.append(
                .appendChange(
                    Change(
                        position: position + 1, committedTimeMilliseconds: verifiedAt, kind: .subscription,
                        subscription: replaced)))
        }
        if let processed { writes.append(processed) }
        let response = RecordVerifiedStateResponse(
            subscription: state, applied: applied, replayed: false, position: position)
        writes.append(
            .remember(
                key: request.idempotencyKey, requestHash: intent.requestHash, response: response.serialized(),
                at: verifiedAt))
        self.init(writes: writes, response: response)
    }

    init(writes: [LedgerWrite], response: RecordVerifiedStateResponse) {
        self.writes = writes
        self.response = response
    }
}
