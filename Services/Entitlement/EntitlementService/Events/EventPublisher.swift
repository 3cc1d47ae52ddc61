import Foundation
public import Lifecycle
import Model
public import Observability
public import RPC
import Synchronization
import Wire

/// Computes the event log in the one entitlement instance that holds the ledger's `events`
/// lease, and appends it to the ledger (where `ListEvents` serves it).
///
/// In step with the feed follower: after each change the view applies, its lifecycle events
/// (`FeedEvents`) and the access events of the accounts it touched (`AccessEventTracker`, the
/// view asked at the change's commit time); as time passes, the `access.ended` of access that
/// ran out with no change. Events are appended in batches with the feed position they cover.
///
/// Taking over (the lease was free or expired): the announced access and the covered position
/// come from the ledger; the changes after that position are read again from the feed for their
/// lifecycle events, and the access of the accounts they touched is compared once, at the
/// view's position — across a takeover, access events say the net change (an access granted
/// and ended again within those seconds is not announced). Ids are stable, so what the previous
/// holder appended is not appended twice.
public actor EventPublisher {
    let client: any ClientTransport
    let view: EntitlementView
    let policies: PolicyStore?
    /// This instance's name in the lease.
    public let owner: String
    let leaseMilliseconds: Int64
    let now: @Sendable () -> Int64
    /// The machine's time (what `now` is unless told otherwise), which the lease's renewals
    /// run on.
    let machineNow: @Sendable () -> Int64
    let logger: Logger
    private var leading = false
    private var ready = false
    private var tracker = AccessEventTracker()
    private var pending: [Event] = []
    /// Counts the times `pending` was replaced (a catch-up, a step-down): an append that was in
    /// flight meanwhile is not taken off the new list.
    private var pendingGeneration = 0
    /// Counts the takes, step-downs and view replacements: a catch-up that one of them overtook
    /// is done again, not put in force.
    private var epoch = 0
    /// The catch-up under way: one at a time, and every caller waits for it.
    private var catchingUp: Task<Void, Never>?
    /// The feed position the computed events cover, and the one last appended.
    private var through: UInt64 = 0
    private var appendedThrough: UInt64 = 0
    private var lease: LeaseKeeper
    private let appended: Counter
    private let leader: Gauge
    /// The changes the view applied that no append covers yet: (position, commit time), oldest
    /// first, for `event_log_lag_seconds`.
    private let uncovered = Mutex<[(position: UInt64, committed: Int64)]>([])
    /// The newest feed position `observe` has taken in, and the calls waiting for one.
    private let observedThrough = Mutex<UInt64>(0)
    private let observedWaiters = PositionWaiters()

    public init(
        client: any ClientTransport, view: EntitlementView, policies: PolicyStore?, owner: String,
        leaseMilliseconds: Int64 = 6000, logger: Logger, metrics: MetricsRegistry? = nil,
        now: (@Sendable () -> Int64)? = nil, logOn: Int64? = nil
    ) {
        self.client = client
        self.view = view
        self.policies = policies
        self.owner = owner
        self.leaseMilliseconds = leaseMilliseconds
        self.logger = logger
        // Unless told otherwise, the logger's clock: the service's.
        self.now = now ?? { [clock = logger.clock] in clock.epochMilliseconds() }
        machineNow = now ?? { [clock = logger.clock] in clock.machineEpochMilliseconds() }
        lease = LeaseKeeper(name: "events", owner: owner, milliseconds: leaseMilliseconds)
        lease.logOn = logOn
        appended =
            metrics?.counter("entitlement_events_appended_total", help: "Events this instance appended to the log.")
            ?? Counter()
        leader =
            metrics?.gauge("entitlement_events_leader", help: "1 while this instance computes the event log.")
            ?? Gauge()
        metrics?.addCollector { [self] text in
            text.family(
                "event_log_lag_seconds", type: "gauge",
                help:
                    "How long ago the oldest change the view applied that the event log does not cover yet was committed (0 when caught up, or when this instance does not compute the log)."
            )
            text.sample("event_log_lag_seconds", [:], eventLogLagSeconds(now: self.now()))
        }
    }

    /// The event log's lag at `now` (epoch ms), in seconds: since the commit of the oldest change
    /// the view applied that no append covers yet; 0 when every one is covered.
    public nonisolated func eventLogLagSeconds(now: Int64) -> Double {
        guard let oldest = uncovered.withLock({ $0.first?.committed }) else { return 0 }
        return Double(max(0, now - oldest)) / 1000
    }

    /// True once `observe` has taken in feed position `position` (at once when it has), false
    /// when `within` passes first.
    nonisolated func observed(_ position: UInt64, within: Duration = .seconds(60)) async -> Bool {
        await withCheckedContinuation { continuation in
            observedWaiters.wait(
                for: position, applied: { observedThrough.withLock { $0 } }, within: within, clock: SystemClock()
            ) { continuation.resume(returning: $0) }
        }
    }

    /// Notes that appends now cover the feed through `position`.
    private func covered(through position: UInt64) {
        uncovered.withLock { changes in changes.removeAll { $0.position <= position } }
    }

    /// Whether this instance computes the log now, caught up with the view.
    public var isComputing: Bool { leading && ready }

    /// How many computed events wait to be appended.
    var pendingCount: Int { pending.count }

    // MARK: The follower's calls

    /// After the view applied `change`; `previousHolder` held its subscription before.
    func observe(_ change: Change, previousHolder: String?) async {
        defer {
            observedThrough.withLock { $0 = max($0, change.position) }
            observedWaiters.reached(change.position)
        }
        guard leading else { return }
        if !ready {
            // The catch-up reads the feed up to the view's position when it began, which may be
            // just before this change: the change is then taken here.
            await catchUp()
            guard leading, ready else { return }
        }
        guard change.position > through else { return }
        let at = change.committedTimeMilliseconds ?? now()
        var events = tracker.due(now: at)
        events += FeedEvents.events(of: change)
        var accounts = Set([change.subscription?.accountID, previousHolder].compactMap { $0 })
        if let account = change.link?.accountID, !account.isEmpty { accounts.insert(account) }
        // The access the change moved is on the trace that recorded the change.
        let trace = change.events.first?.traceID
        for account in accounts.sorted() {
            events += tracker.observe(
                account: account, position: change.position, at: at, access: access(of: account, at: at)
            ).map { event in
                var event = event
                event.traceID = trace
                return event
            }
        }
        pending += events
        through = change.position
        uncovered.withLock { $0.append((change.position, at)) }
    }

    /// A snapshot replaced the view: the changes it skipped are read again.
    func viewReplaced() {
        epoch += 1
        if leading { ready = false }
    }

    // MARK: Time

    /// Ends the access that ran out by `now`.
    public func tick(now: Int64) {
        guard leading, ready else { return }
        pending += tracker.due(now: now)
    }

    /// When `tick` next has something to end.
    func nextEnd() -> Int64? { tracker.nextEnd() }

    // MARK: The lease

    /// Takes or renews the lease; takes over or steps down as it says.
    public func renewLease() async {
        let answer = await lease.ask(client)
        switch lease.update(answer, now: machineNow()) {
        case .taken:
            logger.info("computing the event log", ["owner": owner])
            leading = true
            ready = false
            epoch += 1
            leader.set(1)
        case .lost(let why):
            if leading { stepDown(why) }
        case .none:
            break
        }
        if leading, !ready { await catchUp() }
    }

    private func stepDown(_ why: String) {
        logger.warning("no longer computing the event log", ["owner": owner, "why": why])
        lease.drop()
        leading = false
        ready = false
        epoch += 1
        tracker = AccessEventTracker()
        replacePending([])
        uncovered.withLock { $0 = [] }
        leader.set(0)
    }

    /// Puts `events` in place of what is pending, marking the list as replaced for an append in
    /// flight.
    private func replacePending(_ events: [Event]) {
        pending = events
        pendingGeneration += 1
    }

    /// From the ledger's record of where computation stands to the view's position; joins the
    /// catch-up under way, if any (the actor takes calls while one waits for the ledger, and two
    /// interleaved catch-ups could leave the changes between them with no events).
    private func catchUp() async {
        if let running = catchingUp { return await running.value }
        let running = Task { await self.catchUpUntilCurrent() }
        catchingUp = running
        await running.value
        catchingUp = nil
    }

    /// Catches up again while a take, step-down or snapshot overtook the catch-up.
    private func catchUpUntilCurrent() async {
        while leading, !ready {
            let started = epoch
            guard let caught = await caughtUp() else { return }
            guard started == epoch, leading else { continue }
            tracker = caught.tracker
            replacePending(caught.events)
            through = caught.through
            appendedThrough = caught.appendedThrough
            // The catch-up's changes wait from now (their commit times were not kept).
            uncovered.withLock { $0 = caught.through > caught.appendedThrough ? [(caught.through, now())] : [] }
            ready = true
            logger.info("event log caught up", ["from": "\(caught.appendedThrough)", "to": "\(caught.through)"])
        }
    }

    /// What a catch-up puts in force.
    private struct CatchUp {
        var tracker: AccessEventTracker
        var events: [Event]
        var through: UInt64
        var appendedThrough: UInt64
    }

    /// Reads the ledger's record (the access announced, the feed position covered: where the log
    /// began when nothing was appended yet), then the feed from there to the view's position,
    /// for the events of every change in between; nil when it could not (tried again later).
    private func caughtUp() async -> CatchUp? {
        guard let position = view.position else { return nil }
        do {
            var state = try await client.call(LedgerRPC.getEventState, GetEventStateRequest())
            var announced = state.announced
            while let token = state.nextPageToken {
                state = try await client.call(LedgerRPC.getEventState, GetEventStateRequest(pageToken: token))
                announced += state.announced
            }
            guard state.started else {
                // The ledger starts the log when the lease is taken: one that did not is older.
                throw EventLogError(.notStarted, "the ledger has not started the event log")
            }
            var tracker = AccessEventTracker()
            tracker.restore(announced)
            var events: [Event] = []
            var touched = Set<String>()
            // The access a change moved is on the trace that recorded it, as in `observe`: each
            // account's, the last change that touched it.
            var traces: [String: String] = [:]
            var covered = state.throughFeedPosition
            if covered < position {
                // Who held access through each subscription when the record was made.
                let holders = tracker.accountsByKey()
                let stream = client.serverStream(LedgerRPC.watchChanges, WatchChangesRequest(after: covered))
                for try await message in stream {
                    let change = try Change(serialized: message)
                    guard change.position <= position else { break }
                    events += FeedEvents.events(of: change)
                    var accounts = Set<String>()
                    if let subscription = change.subscription {
                        if let account = subscription.accountID { accounts.insert(account) }
                        accounts.formUnion(holders[subscription.key] ?? [])
                    }
                    if let account = change.link?.accountID, !account.isEmpty { accounts.insert(account) }
                    touched.formUnion(accounts)
                    for account in accounts { traces[account] = change.events.first?.traceID }
                    covered = change.position
                    if covered >= position { break }
                }
                guard covered >= position else {
                    throw EventLogError(
                        .feedEnded, "the change feed ended at \(covered), before the view's position \(position)")
                }
            }
            let at = now()
            events += tracker.due(now: at)
            for account in touched.sorted() {
                events += tracker.observe(
                    account: account, position: position, at: at, access: access(of: account, at: at)
                ).map { event in
                    var event = event
                    event.traceID = traces[account]
                    return event
                }
            }
            return CatchUp(
                tracker: tracker, events: events, through: max(position, state.throughFeedPosition),
                appendedThrough: state.throughFeedPosition)
        } catch {
            logger.warning("event log catch-up failed; trying again", ["error": "\(error)"])
            return nil
        }
    }

    private func access(of account: String, at: Int64) -> [String: AccessEventTracker.Access] {
        guard let policy = policies?.policy else { return [:] }
        return EntitlementMethods.access(of: account, view: view, policy: policy, at: at)
    }

    // MARK: Appending

    /// Appends what was computed, up to `maxBatch` events (and `maxBatchBytes`) at a time; true
    /// when everything was.
    ///
    /// A batch that leaves events behind covers the feed only up to just before the lowest
    /// position among them: one change gives several events, and a position recorded as covered
    /// is never computed again by the next holder of the lease.
    @discardableResult
    public func flush() async -> Bool {
        while leading, ready, !pending.isEmpty || through > appendedThrough {
            let batch = Array(pending.prefix(pending.batchCount(upTo: Self.maxBatch, bytes: Self.maxBatchBytes)))
            let covers = Self.covered(through: through, leftBehind: pending.dropFirst(batch.count))
            let generation = pendingGeneration
            do {
                let answer = try await client.call(
                    LedgerRPC.appendEvents,
                    AppendEventsRequest(owner: owner, events: batch, throughFeedPosition: covers))
                appended.increment(by: Int(answer.appended))
                // A catch-up or a step-down replaced the list while the call ran: what it holds
                // now was not in this batch.
                guard generation == pendingGeneration else { continue }
                pending.removeFirst(min(batch.count, pending.count))
                appendedThrough = max(appendedThrough, covers)
                covered(through: appendedThrough)
            } catch  where error.code == .failedPrecondition {
                stepDown("\(error.message)")
                return false
            } catch {
                logger.warning("appending events failed; trying again", ["error": "\(error)"])
                return false
            }
        }
        return pending.isEmpty
    }

    /// The most events one `AppendEvents` carries, and about the most bytes (each event holds
    /// its subscription's state, so a thousand can outgrow a frame).
    static let maxBatch = 1000
    static let maxBatchBytes = 512 * 1024

    /// The feed position a batch covers when `leftBehind` stay pending: `through` when none do,
    /// else just before the lowest position among them (never past `through`).
    static func covered(through: UInt64, leftBehind: some Collection<Event>) -> UInt64 {
        guard let lowest = leftBehind.lazy.map(\.position).min() else { return through }
        return min(through, lowest > 0 ? lowest - 1 : 0)
    }
}

/// Runs an `EventPublisher`: the lease renewed a third of its time, appends every 20 ms, and
/// `tick` at each announced end (or every second).
public final class EventPublisherService: LifecycleService {
    public let name = "event-publisher"
    public let publisher: EventPublisher
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init(_ publisher: EventPublisher) { self.publisher = publisher }

    public func start() async throws {
        let publisher = publisher
        let running = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !Task.isCancelled {
                        await publisher.renewLease()
                        try? await publisher.logger.clock.sleep(for: .milliseconds(publisher.leaseMilliseconds / 3))
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        await publisher.flush()
                        try? await publisher.logger.clock.sleep(for: .milliseconds(20))
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        let wall = publisher.now()
                        await publisher.tick(now: wall)
                        let next = await publisher.nextEnd().map { max(1, min($0 - wall, 1000)) } ?? 1000
                        try? await publisher.logger.clock.sleep(for: .milliseconds(next))
                    }
                }
            }
        }
        task.withLock { $0 = running }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
        await publisher.flush()
    }
}
