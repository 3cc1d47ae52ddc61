public import Foundation
import HTTPClient
import Model
public import Observability
import ProtoJSON
public import RPC
import Wire

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a deliverer retries, and how much it sends at once.
public struct DeliveryRules: Sendable {
    /// Requests in flight to the endpoint at once.
    public var maxInFlight = 16
    /// The first retry's wait, doubled each time up to `maxBackoff`, each spread by ±20%.
    public var baseBackoff: Int64 = 1000
    public var maxBackoff: Int64 = 3_600_000
    /// How long after its first attempt an event is given up on (a dead letter).
    public var maxAge: Int64 = 3 * 86_400_000
    /// Events read ahead of the delivered position, at most.
    public var window = 5000
    /// A request's time limit.
    public var timeout: TimeInterval = 10

    public init() {}

    /// The wait before attempt `attempts + 1`, given a random number in 0..<1.
    public func backoff(afterAttempts attempts: UInt32, random: Double) -> Int64 {
        let doubled = Double(baseBackoff) * pow(2, Double(min(attempts, 40)) - 1)
        return Int64(min(Double(maxBackoff), doubled) * (0.8 + 0.4 * random))
    }
}

/// Delivers the event log to one endpoint, by the Standard Webhooks rules, in the instance that
/// holds the endpoint's `webhook.<name>` lease.
///
/// At least once: the position delivered through, the attempts that failed and the dead letters
/// are recorded in the ledger, so a restart, a crash or another instance resumes from there (an
/// event sent but not yet recorded as delivered is sent again, with the same `webhook-id`). In
/// order per account: an account's later event waits until its earlier one is delivered or given
/// up; other accounts go on. A 2xx answer acknowledges; 410 disables the endpoint until an
/// operator replays it; anything else (or no answer) is retried with exponential backoff and
/// jitter, and after `maxAge` becomes a dead letter. A dead letter an operator puts back to
/// delivery (`ReplayDeliveries` with a sequence) is sent again beside the log, out of its
/// account's order, with the same retries; the leader reads its delivery state again each
/// `replayCheck` to see such a replay, and a replay after a position, made while it delivers.
public actor WebhookDeliverer {
    public private(set) var endpoint: WebhookEndpoint
    let client: any ClientTransport
    let transport: HTTPClientTransport
    /// For `http://` endpoints: kept-alive connections, one per request in flight.
    let pool: HTTPConnectionPool
    let owner: String
    let leaseMilliseconds: Int64
    let rules: DeliveryRules
    let now: @Sendable () -> Int64
    /// The machine's time (what `now` is unless told otherwise): a request's
    /// `webhook-timestamp`, which the receiver checks against its own clock, and the lease's
    /// renewals, which last the seconds they say even where the service decides at a
    /// simulated time.
    let machineNow: @Sendable () -> Int64
    let random: @Sendable () -> Double
    let logger: Logger
    let metrics: MetricsRegistry?

    private var leading = false
    private var loaded = false
    private var disabled = false
    private var lease: LeaseKeeper
    /// Everything up to here is delivered, unwanted or dead (as recorded, and as known here).
    private var deliveredThrough: UInt64 = 0
    private var recordedThrough: UInt64 = 0
    /// The log read after `deliveredThrough`, by sequence: nil once done.
    /// Each entry's lane is its account's (`lane(of:)`).
    private var window: [(sequence: UInt64, lane: Int, event: Event?)] = []
    /// Where the window's first entry not yet done is: entries before it are done and wait to
    /// be dropped in one go (`advance`), so an answer does not move the whole window.
    private var head = 0
    private var fetchedThrough: UInt64 = 0
    private var attempts: [UInt64: DeliveryAttempt] = [:]
    /// Dead letters an operator put back to delivery, at or before `deliveredThrough` (out of
    /// the window): each one's attempt, with its event.
    private var redeliveries: [UInt64: DeliveryAttempt] = [:]
    /// When the delivery state was last read from the ledger (nil: not since loading).
    private var stateRead: Int64?
    private var inFlight = Set<UInt64>()
    /// The lanes `sendWhatMayGo` has passed, kept to reuse its storage.
    private var lanesSeen = Set<Int>()
    /// The pool's answers, waiting to be taken in by the actor a batch at a time.
    private let answers = DeliveryAnswers()
    /// Changes to record: attempts (failed or dead), and sequences delivered after failing.
    private var changedAttempts: [UInt64: DeliveryAttempt] = [:]
    private var recovered: [UInt64] = []
    private var disableToRecord = false
    /// Counts step-downs: a record in flight across one leaves the new state alone.
    private var generation = 0
    /// The endpoint's dead letters not yet redelivered, as last counted, and when (nil: not yet).
    private var deadLetters = 0
    private var deadLettersCounted: Int64?
    private let deadLettersGauge: Gauge?
    private let lagGauge: Gauge?
    private let deliveringGauge: Gauge?

    public init(
        endpoint: WebhookEndpoint, client: any ClientTransport, owner: String, leaseMilliseconds: Int64 = 6000,
        rules: DeliveryRules = DeliveryRules(), logger: Logger, metrics: MetricsRegistry? = nil,
        now: (@Sendable () -> Int64)? = nil,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.endpoint = endpoint
        self.client = client
        self.owner = owner
        self.leaseMilliseconds = leaseMilliseconds
        self.rules = rules
        self.logger = logger
        self.metrics = metrics
        // At 0 from the start, so that a rate over it is defined before the first dead letter.
        _ = metrics?.counter(
            "webhook_dead_letters_total", help: "Events given up on.", labels: ["endpoint": endpoint.name])
        deadLettersGauge = metrics?.gauge(
            "webhook_dead_letters",
            help: "Events given up on and not redelivered yet (shown by the delivering instance).",
            labels: ["endpoint": endpoint.name])
        // The delivery gauges too: an instance that does not deliver (yet) shows 0.
        lagGauge = metrics?.gauge(
            "webhook_lag_seconds", help: "How old the oldest event not yet delivered is (0 when none).",
            labels: ["endpoint": endpoint.name])
        deliveringGauge = metrics?.gauge(
            "webhook_delivering", help: "1 while this instance delivers to the endpoint.",
            labels: ["endpoint": endpoint.name])
        // Unless told otherwise, the logger's clock: the service's.
        self.now = now ?? { [clock = logger.clock] in clock.epochMilliseconds() }
        machineNow = now ?? { [clock = logger.clock] in clock.machineEpochMilliseconds() }
        self.random = random
        lease = LeaseKeeper(name: "webhook.\(endpoint.name)", owner: owner, milliseconds: leaseMilliseconds)
        transport = HTTPClientTransport(requestTimeout: rules.timeout, maxResponseBytes: 64 * 1024)
        pool = HTTPConnectionPool(
            requestTimeout: rules.timeout, maxResponseBytes: 64 * 1024, maxIdle: rules.maxInFlight,
            maxActive: rules.maxInFlight)
    }

    /// Takes a new version of the endpoint (a reloaded file): its URL, secrets and filters.
    public func update(_ endpoint: WebhookEndpoint) { self.endpoint = endpoint }

    /// Whether this instance delivers to the endpoint now.
    public var isDelivering: Bool { leading && loaded }
    public var isDisabled: Bool { disabled }
    /// Events sent and not answered yet.
    public var inFlightCount: Int { inFlight.count }

    // MARK: The lease

    public func renewLease() async {
        let answer = await lease.ask(client)
        switch lease.update(answer, now: machineNow()) {
        case .taken:
            leading = true
            loaded = false
            logger.info("delivering webhooks", ["endpoint": endpoint.name, "owner": owner])
            delivering(1)
        case .lost(let why):
            if leading { stepDown(why) }
        case .none:
            break
        }
    }

    private func stepDown(_ why: String) {
        logger.warning("no longer delivering webhooks", ["endpoint": endpoint.name, "why": why])
        lease.drop()
        delivering(0)
        deadLettersCounted = nil
        deadLettersGauge?.set(0)
        leading = false
        loaded = false
        window = []
        head = 0
        attempts = [:]
        redeliveries = [:]
        stateRead = nil
        changedAttempts = [:]
        recovered = []
        generation += 1
    }

    // MARK: One round

    /// Loads the recorded state when needed, reads more of the log, sends what may go now, and
    /// records progress. Returns when its sends have started (their answers come back later).
    public func step() async {
        guard leading else { return }
        do {
            // A 410 is recorded first; a disabled endpoint looks again for an operator's replay.
            if disableToRecord { try await record() }
            if !loaded || disabled { try await load() }
            try await readStateWhenDue()
            await countDeadLettersWhenDue()
            guard !disabled else { return }
            try await fill()
            sendWhatMayGo()
            try await record()
        } catch let error as RPCError where error.code == .failedPrecondition {
            stepDown(error.message)
        } catch {
            logger.warning("webhook delivery round failed", ["endpoint": endpoint.name, "error": "\(error)"])
        }
    }

    private func load() async throws {
        take(try await client.call(LedgerRPC.getDeliveryState, GetDeliveryStateRequest(endpoint: endpoint.name)))
    }

    /// Starts over from the delivery state the ledger recorded.
    private func take(_ state: GetDeliveryStateResponse) {
        deliveredThrough = state.deliveredThrough
        recordedThrough = state.deliveredThrough
        fetchedThrough = state.deliveredThrough
        disabled = state.disabledMilliseconds != nil
        attempts = Dictionary(state.retrying.map { ($0.sequence, $0) }, uniquingKeysWith: { _, last in last })
        redeliveries = Dictionary(state.redelivering.map { ($0.sequence, $0) }, uniquingKeysWith: { _, last in last })
        window = []
        head = 0
        inFlight = []
        loaded = true
        stateRead = now()
    }

    /// How often the leader reads its delivery state from the ledger again, in milliseconds, to
    /// see an operator's replay made while it delivers.
    static let replayCheck: Int64 = 60_000

    /// Reads the delivery state again when the last read is `replayCheck` old, once this
    /// instance's progress is recorded: a position set back (a replay after a position) starts
    /// over from it; a dead letter put back to delivery joins the redeliveries.
    private func readStateWhenDue() async throws {
        guard let read = stateRead, now() - read >= Self.replayCheck else { return }
        try await record()
        let state = try await client.call(LedgerRPC.getDeliveryState, GetDeliveryStateRequest(endpoint: endpoint.name))
        stateRead = now()
        if state.deliveredThrough < recordedThrough {
            logger.info(
                "webhook deliveries replayed from an earlier position",
                ["endpoint": endpoint.name, "after": "\(state.deliveredThrough)"])
            take(state)
            return
        }
        for attempt in state.redelivering where redeliveries[attempt.sequence] == nil {
            // One this instance gave up on or delivered again, not yet recorded, stays as it is here.
            guard !inFlight.contains(attempt.sequence), changedAttempts[attempt.sequence] == nil,
                !recovered.contains(attempt.sequence)
            else { continue }
            redeliveries[attempt.sequence] = attempt
        }
    }

    /// How often the leader counts the endpoint's dead letters again, in milliseconds: an
    /// operator's replay takes them out in the ledger, not here.
    static let deadLetterRecount: Int64 = 60_000

    /// Counts the endpoint's dead letters not yet redelivered from the ledger, for the
    /// `webhook_dead_letters` gauge, when the last count is `deadLetterRecount` old (between
    /// counts, each event given up on adds one). A count that fails is tried next round.
    private func countDeadLettersWhenDue() async {
        guard let gauge = deadLettersGauge, deadLettersCounted.map({ now() - $0 >= Self.deadLetterRecount }) ?? true
        else { return }
        var count = 0
        var token: String?
        do {
            repeat {
                let page = try await client.call(
                    LedgerRPC.listDeadLetters,
                    ListDeadLettersRequest(endpoint: endpoint.name, limit: 500, pageToken: token))
                count += page.deadLetters.count
                token = page.nextPageToken
            } while token != nil
        } catch {
            logger.debug("webhook dead letters not counted", ["endpoint": endpoint.name, "error": "\(error)"])
            return
        }
        deadLetters = count
        deadLettersCounted = now()
        gauge.set(count)
    }

    private func fill() async throws {
        while window.count - head < rules.window {
            let page = try await client.call(
                LedgerRPC.listEvents, ListEventsRequest(afterSequence: fetchedThrough, limit: 500))
            for event in page.events {
                let wanted = endpoint.wants(type: event.type, account: event.accountID)
                window.append((event.sequence, Self.lane(of: event), wanted ? event : nil))
            }
            guard page.lastSequence > fetchedThrough else { break }
            fetchedThrough = page.lastSequence
            if page.events.count < 500 { break }
        }
        advance()
    }

    /// Moves `deliveredThrough` over the done events at the window's start.
    private func advance() {
        while head < window.count, window[head].event == nil {
            deliveredThrough = window[head].sequence
            head += 1
        }
        if head == window.count {
            window.removeAll(keepingCapacity: true)
            head = 0
            deliveredThrough = max(deliveredThrough, fetchedThrough)
        } else if head >= 1024, head * 2 >= window.count {
            window.removeFirst(head)
            head = 0
        }
        lag()
    }

    /// The index of `sequence` in the window (sequences ascend), if it is there.
    private func index(of sequence: UInt64) -> Int? {
        var low = head
        var high = window.count
        while low < high {
            let middle = (low + high) / 2
            if window[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < window.count && window[low].sequence == sequence ? low : nil
    }

    /// Sends the events that may go now. To an `https://` endpoint, through URLSession, a task
    /// each, as many as `maxInFlight` allows. To an `http://` one they are encoded and signed
    /// here and handed to the pool together, up to `readyAhead` times `maxInFlight`: the pool
    /// sends `maxInFlight` at once and starts the next as soon as one is answered, with no hop
    /// back here in between. Its answers come back through `answers` and are taken in by
    /// `takeAnswers`, one hop for all that arrived meanwhile.
    private func sendWhatMayGo() {
        let pooled = HTTPConnectionPool.accepts(endpoint.url)
        let limit = pooled ? rules.maxInFlight * Self.readyAhead : rules.maxInFlight
        guard inFlight.count < limit else { return }
        let at = now()
        let sent = machineNow()
        var requests: [(HTTPConnectionPool.Request, HTTPConnectionPool.Reply)] = []
        lanesSeen.removeAll(keepingCapacity: true)
        // Dead letters put back to delivery go first, each on its own.
        for (sequence, attempt) in redeliveries where attempt.nextAttemptMilliseconds <= at {
            guard inFlight.count < limit else { break }
            guard !inFlight.contains(sequence), let event = attempt.event else { continue }
            send(event, sequence, pooled: pooled, at: sent, into: &requests)
        }
        // By index: an entry is read in place, its event copied only when it goes.
        for index in head..<window.count where window[index].event != nil {
            // An account's events go one at a time, in order.
            guard lanesSeen.insert(window[index].lane).inserted else { continue }
            let sequence = window[index].sequence
            guard !inFlight.contains(sequence) else { continue }
            if let attempt = attempts[sequence], attempt.nextAttemptMilliseconds > at { continue }
            guard inFlight.count < limit else { break }
            guard let event = window[index].event else { continue }
            send(event, sequence, pooled: pooled, at: sent, into: &requests)
        }
        pool.submit(requests)
    }

    /// Sends `event` (the log's `sequence`), signed at `sent`: to an `http://` endpoint, added to
    /// `requests` for the pool; else through URLSession, in a task of its own.
    private func send(
        _ event: Event, _ sequence: UInt64, pooled: Bool, at sent: Int64,
        into requests: inout [(HTTPConnectionPool.Request, HTTPConnectionPool.Reply)]
    ) {
        if pooled {
            let (headers, body) = Self.message(event, to: endpoint, at: sent)
            guard let request = HTTPConnectionPool.Request("POST", endpoint.url, headers: headers, body: body)
            else { return }
            inFlight.insert(sequence)
            requests.append(
                (
                    request,
                    { [answers] outcome in
                        if answers.put(sequence, outcome) { Task { await self.takeAnswers() } }
                    }
                ))
        } else {
            inFlight.insert(sequence)
            Task { [endpoint, transport] in
                let outcome = await transport.perform(Self.request(event, to: endpoint, at: sent))
                self.finished(sequence, outcome)
            }
        }
    }

    /// The lane of an event: a hash of its account, so that choosing what may go compares
    /// numbers. Two accounts that share one only wait for each other, in order.
    static func lane(of event: Event) -> Int { (event.accountID ?? "").hashValue }

    /// How many times `maxInFlight` events an `http://` endpoint's pool is given at once: those
    /// in flight and the next ones, ready when an answer frees a connection.
    static let readyAhead = 16

    /// Takes in every answer the pool has handed over, then sends what may go after them; again
    /// while more arrived meanwhile.
    private func takeAnswers() {
        while case let batch = answers.take(), !batch.isEmpty {
            var acknowledged = false
            for (sequence, outcome) in batch { acknowledged = settle(sequence, outcome) || acknowledged }
            // The accounts' next events, or others', go at once rather than at the next round.
            if acknowledged, leading, !disabled { sendWhatMayGo() }
        }
    }

    /// The signed POST of `event` to this deliverer's endpoint, as URLSession sends it.
    func request(_ event: Event, at: Int64) -> URLRequest { Self.request(event, to: endpoint, at: at) }

    /// The signed POST of `event` to `endpoint`, as URLSession sends it.
    static func request(_ event: Event, to endpoint: WebhookEndpoint, at: Int64) -> URLRequest {
        let (headers, body) = message(event, to: endpoint, at: at)
        var request = URLRequest(url: endpoint.url)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// The headers and body of the signed POST of `event`; on the trace that recorded it, when
    /// the event names one (a delivery is otherwise a trace of its own).
    static func message(_ event: Event, to endpoint: WebhookEndpoint, at: Int64) -> (
        headers: [(String, String)], body: [UInt8]
    ) {
        let body: [UInt8]
        do {
            body = try ProtoJSON.decodeToJSONBytes(event.serialized(), as: Event.protoName, pretty: false)
        } catch {
            // A message's own encoding always reads back as its schema's JSON.
            preconditionFailure("an Event's encoding did not read back as JSON: \(error)")
        }
        let timestamp = at / 1000
        var headers = [
            ("Content-Type", "application/json"), ("webhook-id", event.id), ("webhook-timestamp", String(timestamp)),
            (
                "webhook-signature",
                WebhookSecret.header(endpoint.secrets, id: event.id, timestamp: timestamp, body: body)
            ),
        ]
        if let trace = event.traceID.flatMap(TraceContext.init(traceID:)) {
            headers.append((TraceContext.headerName, trace.traceparent))
        }
        return (headers, body)
    }

    /// Takes in the answer to `sequence`'s delivery, then sends what may go after it.
    func finished(_ sequence: UInt64, _ outcome: Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>) {
        // The account's next event, or another's, goes at once rather than at the next round.
        if settle(sequence, outcome), leading, !disabled { sendWhatMayGo() }
    }

    /// Takes in the answer to `sequence`'s delivery; true when it was acknowledged.
    @discardableResult
    private func settle(
        _ sequence: UInt64, _ outcome: Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>
    ) -> Bool {
        guard inFlight.remove(sequence) != nil else { return false }
        // A redelivery is out of the window (at or before the delivered position).
        let redelivery = redeliveries[sequence]
        let index = redelivery == nil ? index(of: sequence) : nil
        guard redelivery != nil || index != nil else { return false }
        let status: Int
        var problem: String?
        switch outcome {
        case .success(let response): status = response.status
        case .failure(let failure):
            status = 0
            problem = "\(failure)"
        }
        count(status)
        if (200..<300).contains(status) {
            if redeliveries.removeValue(forKey: sequence) != nil || attempts.removeValue(forKey: sequence) != nil {
                changedAttempts[sequence] = nil
                recovered.append(sequence)
            }
            if let index {
                window[index].event = nil
                advance()
            }
            return true
        }
        if status == 410 {
            logger.warning("the receiver answered 410 Gone: the endpoint is disabled", ["endpoint": endpoint.name])
            disabled = true
            disableToRecord = true
            return false
        }
        let at = now()
        var attempt =
            redelivery ?? attempts[sequence] ?? DeliveryAttempt(sequence: sequence, firstAttemptMilliseconds: at)
        // A dead letter put back to delivery counts its longest wait from its first attempt since.
        if attempt.firstAttemptMilliseconds == 0 { attempt.firstAttemptMilliseconds = at }
        attempt.attempts += 1
        attempt.lastStatus = Int32(status)
        attempt.lastError = problem.map { String($0.prefix(1024)) }
        attempt.nextAttemptMilliseconds = at + rules.backoff(afterAttempts: attempt.attempts, random: random())
        if at - attempt.firstAttemptMilliseconds >= rules.maxAge {
            attempt.deadMilliseconds = at
            // A redelivery's attempt has its event already.
            if let index {
                attempt.event = window[index].event
                window[index].event = nil
            }
            metrics?.counter(
                "webhook_dead_letters_total", help: "Events given up on.", labels: ["endpoint": endpoint.name]
            ).increment()
            deadLetters += 1
            deadLettersGauge?.set(deadLetters)
            logger.warning(
                "a webhook event is given up on", ["endpoint": endpoint.name, "sequence": "\(sequence)"])
            attempts[sequence] = nil
            redeliveries[sequence] = nil
            if index != nil { advance() }
        } else if redelivery != nil {
            redeliveries[sequence] = attempt
        } else {
            attempts[sequence] = attempt
        }
        changedAttempts[sequence] = attempt
        return false
    }

    private func delivering(_ value: Int) { deliveringGauge?.set(value) }

    private func count(_ status: Int) {
        metrics?.counter(
            "webhook_attempts_total", help: "Delivery attempts, by the receiver's status (0: no answer).",
            labels: ["endpoint": endpoint.name, "status": "\(status)"]
        ).increment()
    }

    /// The age of the oldest event not delivered yet.
    private func lag() {
        let oldest = window[head...].first { $0.event != nil }?.event?.recordedTimeMilliseconds
        lagGauge?.set(milliseconds: oldest.map { max(0, now() - $0) } ?? 0)
    }

    /// Writes what changed since the last record to the ledger, at most `maxRecord` attempts (and
    /// `maxRecordBytes` of them) and as many recovered sequences at a time. When attempts are
    /// left for the next record, the position recorded as delivered stops just before the first
    /// of them: a dead letter the ledger has no row for must not fall behind that position.
    public func record() async throws {
        guard leading, loaded,
            deliveredThrough > recordedThrough || !changedAttempts.isEmpty || !recovered.isEmpty || disableToRecord
        else { return }
        let sorted = changedAttempts.values.sorted { $0.sequence < $1.sequence }
        // A dead letter keeps its event: a thousand of them can outgrow a frame.
        let changed = Array(sorted.prefix(sorted.batchCount(upTo: Self.maxRecord, bytes: Self.maxRecordBytes)))
        let delivered = Array(recovered.prefix(Self.maxRecord))
        let through = Self.recordable(
            deliveredThrough, firstLeftOut: sorted.count > changed.count ? sorted[changed.count].sequence : nil)
        let disable = disableToRecord
        let started = generation
        _ = try await client.call(
            LedgerRPC.recordDeliveries,
            RecordDeliveriesRequest(
                endpoint: endpoint.name, owner: owner, deliveredThrough: through, attempts: changed,
                delivered: delivered.map { DeliveryAttempt(sequence: $0) }, disable: disable))
        // A step-down while the call ran emptied what this record was taken from.
        guard started == generation else { return }
        recordedThrough = max(recordedThrough, through)
        for attempt in changed where changedAttempts[attempt.sequence] == attempt {
            changedAttempts[attempt.sequence] = nil
        }
        recovered.removeFirst(delivered.count)
        if disable { disableToRecord = false }
    }

    /// The most attempts, and recovered sequences, one `RecordDeliveries` carries, and about
    /// the most bytes of attempts.
    static let maxRecord = 1000
    static let maxRecordBytes = 512 * 1024

    /// The position a record may say is delivered: `deliveredThrough`, or just before the first
    /// attempt left for the next record when that is lower.
    static func recordable(_ deliveredThrough: UInt64, firstLeftOut: UInt64?) -> UInt64 {
        guard let firstLeftOut else { return deliveredThrough }
        return min(deliveredThrough, max(firstLeftOut, 1) - 1)
    }
}
