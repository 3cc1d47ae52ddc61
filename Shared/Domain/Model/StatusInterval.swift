/// A state that passes — a billing grace period, a billing retry, an account hold, a pause — as
/// the store showed it, from where it began to where a later fact ended it. Mirrors
/// `subscriptions.common.v1.StatusInterval`. Kept beside the periods, so that access at an
/// instant inside it is what the state means then, after the state itself has passed.
public struct StatusInterval: Sendable, Hashable {
    public var state: SubscriptionState?
    /// Where it began (epoch milliseconds).
    public var startMilliseconds: Int64
    /// Where it ended; `nil` while no fact has ended it and the store stated no end.
    public var endMilliseconds: Int64?
    /// The store time of the first fact that showed it.
    public var shownTimeMilliseconds: Int64?
    /// The store time of the fact that ended it, when a fact did.
    public var endedTimeMilliseconds: Int64?

    public init(
        state: SubscriptionState?, startMilliseconds: Int64, endMilliseconds: Int64? = nil,
        shownTimeMilliseconds: Int64? = nil, endedTimeMilliseconds: Int64? = nil
    ) {
        self.state = state
        self.startMilliseconds = startMilliseconds
        self.endMilliseconds = endMilliseconds
        self.shownTimeMilliseconds = shownTimeMilliseconds
        self.endedTimeMilliseconds = endedTimeMilliseconds
    }

    /// The states kept as intervals: the ones a subscription passes through and leaves.
    public static func isPassing(_ state: SubscriptionState?) -> Bool {
        switch state {
        case .gracePeriod?, .billingRetry?, .accountHold?, .paused?: true
        default: false
        }
    }

    /// Whether `at` falls inside it.
    public func contains(_ at: Int64) -> Bool { startMilliseconds <= at && at < (endMilliseconds ?? Int64.max) }
}

/// One verified state as the status intervals read it: its store time, its state, where a
/// passing state began and where the store said it ends.
public struct StateFact: Sendable, Hashable {
    public var storeTimeMilliseconds: Int64
    public var state: SubscriptionState
    /// For a passing state: where it began (see `init(_:)`).
    public var startMilliseconds: Int64
    /// For a passing state: the store's stated end (Apple's grace end, Play's automatic resume).
    public var statedEndMilliseconds: Int64?

    public init(storeTimeMilliseconds: Int64, state: SubscriptionState, startMilliseconds: Int64, statedEnd: Int64?) {
        self.storeTimeMilliseconds = storeTimeMilliseconds
        self.state = state
        self.startMilliseconds = startMilliseconds
        self.statedEndMilliseconds = statedEnd
    }

    /// The fact a verified state is, at `time` (the store's time of the change it shows; the
    /// state's store time when nil), nil without a state or a time. A passing state began where
    /// the paid time it follows ended (the state's expiry: Apple's `expiresDate`, Play's
    /// `expiryTime` once access stopped), or at the fact's own time when that is sooner (Play
    /// moves `expiryTime` to the end of grace); grace states its end, a pause its resume.
    public init?(_ subscription: Subscription, time: Int64? = nil) {
        guard let state = subscription.state, let time = time ?? subscription.storeTimeMilliseconds else {
            return nil
        }
        storeTimeMilliseconds = time
        self.state = state
        startMilliseconds = min(subscription.expiresTimeMilliseconds ?? time, time)
        switch state {
        case .gracePeriod: statedEndMilliseconds = subscription.graceExpiresTimeMilliseconds
        case .paused: statedEndMilliseconds = subscription.autoResumeTimeMilliseconds
        default: statedEndMilliseconds = nil
        }
    }

    /// The status intervals a subscription's facts show, whatever order they were recorded in:
    /// the facts in store-time order (then by state, for facts at one time), each run of facts in
    /// one passing state an interval, from the start its first fact gives but not before the
    /// previous interval ends (a billing retry that follows a grace period from the same start
    /// begins where the grace ended) to the sooner of
    /// the stated end its last fact gives and the first later fact in another state. The latest
    /// `limit`.
    public static func intervals(_ facts: some Sequence<StateFact>, limit: Int = 64) -> [StatusInterval] {
        let ordered = facts.sorted {
            ($0.storeTimeMilliseconds, $0.state.rawValue) < ($1.storeTimeMilliseconds, $1.state.rawValue)
        }
        var intervals: [StatusInterval] = []
        var index = 0
        while index < ordered.count {
            let first = ordered[index]
            guard StatusInterval.isPassing(first.state) else {
                index += 1
                continue
            }
            var last = first
            var start = first.startMilliseconds
            index += 1
            while index < ordered.count, ordered[index].state == first.state {
                last = ordered[index]
                start = min(start, last.startMilliseconds)
                index += 1
            }
            let closer = index < ordered.count ? ordered[index].storeTimeMilliseconds : nil
            // An interval never reaches back over an earlier one: a retry or hold that follows
            // grace from the same start begins where grace ended, and a retry that resumes after
            // another fact (a refund, reversed later) where the one before it ended.
            if let previousEnd = intervals.last?.endMilliseconds, previousEnd > start { start = previousEnd }
            var interval = StatusInterval(
                state: first.state, startMilliseconds: start, shownTimeMilliseconds: first.storeTimeMilliseconds)
            switch (last.statedEndMilliseconds, closer) {
            case (let stated?, let closer?) where closer < stated:
                interval.endMilliseconds = closer
                interval.endedTimeMilliseconds = closer
            case (let stated?, _):
                interval.endMilliseconds = stated
            case (nil, let closer?):
                interval.endMilliseconds = closer
                interval.endedTimeMilliseconds = closer
            case (nil, nil):
                break
            }
            if let end = interval.endMilliseconds, end <= start { continue }
            intervals.append(interval)
        }
        return Array(intervals.suffix(limit))
    }
}
