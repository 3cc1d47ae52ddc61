import BenchSupport
import Foundation
import HTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One store's figures in the overload phase.
struct OverloadFigures {
    /// First posts a second: twice the closed loop's end-to-end rate.
    var rate = 0.0
    /// Notifications posted (each until it was answered 2xx).
    var notifications = 0
    /// How long the first posts took.
    var burstSeconds = 0.0
    /// Notifications answered 2xx on their first post.
    var acceptedFirst = 0
    /// 503 answers in all, and the notifications that got at least one.
    var refusals = 0
    var refusedNotifications = 0
    /// Answers neither 2xx nor 503 (retried after a second, as a store would).
    var otherFailures = 0
    /// The longest `Retry-After` answered, in seconds.
    var longestRetryAfter = 0
    /// Notifications whose renewal did not reach both CheckAccess and the webhook.
    var lost = 0
    /// Resident memory of each service in kB: before the phase, and its peak during it.
    var residentBefore: [String: Int] = [:]
    var residentPeak: [String: Int] = [:]
    /// From the end of the first posts until the last renewal reached the webhook, and the
    /// renewals a second that arrived in that time.
    var clearSeconds = 0.0
    var clearRate = 0.0
}

/// The overload phase: a month's notifications posted open loop at twice the sustainable rate,
/// each refused one posted again after its `Retry-After` (as a store delivers again), then
/// whether every renewal reached CheckAccess and the webhook, the services' resident memory
/// meanwhile, and how long the backlog took to clear once the posts stopped.
enum Overload {
    static let services = ["verifier", "ledger", "entitlement"]
    /// How long one notification is posted again before it counts as lost.
    static let giveUp: Duration = .seconds(900)

    static func run(
        store: Store, wave: [StoreNotification], ids: [String], rate: Double, for duration: Int, stack: Stack,
        receiver: WebhookReceiver, verifier: String, entitlement: String
    ) throws(BenchError) -> OverloadFigures {
        var figures = OverloadFigures()
        figures.rate = rate
        var owner: [String: Int] = [:]
        for (index, id) in ids.enumerated() { owner[id] = index }
        let total = min(wave.count, max(1, Int(rate * Double(duration))))
        let posts = try wave.prefix(total).map { item throws(BenchError) in
            guard let subject = item.subject, let index = owner[subject] else {
                throw BenchError("\(store.name): an overload notification names no subscription bought here")
            }
            return (notification: item, account: store.account(index))
        }
        figures.notifications = posts.count
        let accounts = posts.map(\.account)
        let checks = Loopback(lanes: 8)
        let check = "\(entitlement)/subscriptions.entitlement.v1.Entitlement/CheckAccess"
        let untilBefore = try accessUntil(accounts, checks: checks, url: check)
        let webhooksBefore = accounts.map { receiver.renewals(of: $0).count }

        let processes = [
            ("verifier", stack.verifier.pid), ("ledger", stack.ledger.pid), ("entitlement", stack.entitlement.pid),
        ]
        for (name, pid) in processes {
            figures.residentBefore[name] = ProcessMemory.kilobytes(pid: pid, "VmRSS")
            ProcessMemory.resetPeak(pid: pid)
        }
        let sampler = ProcessMemory.Sampler(processes)

        // Eight sessions of at most six connections each: under the services' 64 per address.
        let lanes = (0..<8).map { _ in HTTPClientTransport(requestTimeout: 120, maxResponseBytes: 1 << 20) }
        let tally = Shared(OverloadFigures())
        let url = verifier + store.notificationPath
        let burst = try waitFor { () async throws -> (ContinuousClock.Instant, Duration) in
            try await withThrowingTaskGroup(of: Void.self) { group in
                let start = ContinuousClock.now
                for (index, post) in posts.enumerated() {
                    let due = start + .seconds(Double(index) / rate)
                    if due > ContinuousClock.now { try await Task.sleep(until: due, clock: .continuous) }
                    let lane = lanes[index % lanes.count]
                    group.addTask {
                        try await deliver(post.notification, to: url, over: lane, tally: tally)
                    }
                }
                let end = ContinuousClock.now
                try await group.waitForAll()
                return (end, end - start)
            }
        }
        let (burstEnd, burstLength) = burst
        figures.burstSeconds = seconds(burstLength)
        tally.withLock { counted in
            figures.acceptedFirst = counted.acceptedFirst
            figures.refusals = counted.refusals
            figures.refusedNotifications = counted.refusedNotifications
            figures.otherFailures = counted.otherFailures
            figures.longestRetryAfter = counted.longestRetryAfter
            figures.lost = counted.lost
        }

        // Every renewal to the webhook (what was never accepted is already counted lost).
        _ = receiver.wait(until: ContinuousClock.now + .seconds(1200)) { arrivals in
            accounts.indices.allSatisfy { (arrivals.renewedAt[accounts[$0]]?.count ?? 0) > webhooksBefore[$0] }
        }
        let arrived = accounts.indices.map { receiver.renewals(of: accounts[$0]).count > webhooksBefore[$0] }
        let arrivals = accounts.indices.compactMap { index -> ContinuousClock.Instant? in
            arrived[index] ? receiver.renewals(of: accounts[index]).last : nil
        }
        if let last = arrivals.max(), last > burstEnd {
            figures.clearSeconds = seconds(last - burstEnd)
            figures.clearRate = Double(arrivals.filter { $0 > burstEnd }.count) / figures.clearSeconds
        }
        let untilAfter = try accessUntil(accounts, checks: checks, url: check)
        let missing = accounts.indices.filter { !arrived[$0] || untilAfter[$0] <= untilBefore[$0] }.count
        figures.lost = max(figures.lost, missing)

        let sampled = sampler.stop()
        for (name, pid) in processes {
            figures.residentPeak[name] = max(sampled[name] ?? 0, ProcessMemory.kilobytes(pid: pid, "VmHWM"))
        }
        BenchCommand.note(
            "ingestbench",
            "\(store.name): overload at \(ReportText.fixed(rate, 0))/s, \(figures.notifications) notifications, \(figures.refusals) refusals, \(figures.lost) lost, backlog cleared \(ReportText.fixed(figures.clearSeconds, 1)) s after the burst"
        )
        return figures
    }

    /// Posts `notification` until it is answered 2xx, waiting out each 503's `Retry-After`.
    private static func deliver(
        _ notification: StoreNotification, to url: String, over lane: HTTPClientTransport,
        tally: Shared<OverloadFigures>
    ) async throws {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in notification.headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = notification.body
        let started = ContinuousClock.now
        var refused = false
        var first = true
        while true {
            var wait = 1
            switch await lane.perform(request) {
            case .success(let response) where (200..<300).contains(response.status):
                tally.withLock { counted in
                    if first { counted.acceptedFirst += 1 }
                    if refused { counted.refusedNotifications += 1 }
                }
                return
            case .success(let response) where response.status == 503:
                wait = Int(response.headers["retry-after"] ?? "") ?? 1
                refused = true
                tally.withLock { counted in
                    counted.refusals += 1
                    counted.longestRetryAfter = max(counted.longestRetryAfter, wait)
                }
            default:
                tally.withLock { $0.otherFailures += 1 }
            }
            first = false
            guard ContinuousClock.now - started < giveUp else {
                tally.withLock { $0.lost += 1 }
                return
            }
            try await Task.sleep(for: .seconds(wait))
        }
    }

    /// CheckAccess's `untilMs` for the capability of each of `accounts`.
    private static func accessUntil(_ accounts: [String], checks: Loopback, url: String) throws(BenchError)
        -> [Int64]
    {
        let until = Shared([Int64](repeating: 0, count: accounts.count))
        try waitFor {
            try await closedLoop(accounts.count, concurrency: 16) { worker, index throws(BenchError) in
                let answer = try await checks.call(
                    url, ["accountId": accounts[index], "capability": "pro"], reuse: true, lane: worker)
                let value = Int64(answer["untilMs"] as? String ?? "0") ?? 0
                until.withLock { $0[index] = value }
            }
        }
        return until.withLock { $0 }
    }

    /// The phase's lines of the report, and its JSON entry.
    static func report(_ figures: OverloadFigures) -> (lines: [String], json: [String: Any]) {
        let memory = services.map { name in
            "\(name) \(megabytes(figures.residentBefore[name])) → \(megabytes(figures.residentPeak[name])) MB"
        }
        let lines = [
            "  overload at \(ReportText.fixed(figures.rate, 0))/s open loop for \(ReportText.fixed(figures.burstSeconds, 1)) s (\(figures.notifications) notifications): \(figures.acceptedFirst) accepted at once, \(figures.refusedNotifications) accepted after \(figures.refusals) refusals (503, Retry-After up to \(figures.longestRetryAfter) s), \(figures.otherFailures) other failures, \(figures.lost) lost",
            "    resident memory before → peak: \(memory.joined(separator: ", "))",
            "    backlog cleared \(ReportText.fixed(figures.clearSeconds, 1)) s after the burst, at \(ReportText.fixed(figures.clearRate, 0)) notifications/s",
        ]
        var json: [String: Any] = [
            "rate": Int(figures.rate), "notifications": figures.notifications, "accepted_first": figures.acceptedFirst,
            "refusals": figures.refusals, "refused_notifications": figures.refusedNotifications,
            "other_failures": figures.otherFailures, "longest_retry_after_s": figures.longestRetryAfter,
            "lost": figures.lost, "burst_s": figures.burstSeconds, "clear_s": figures.clearSeconds,
            "clear_rate": Int(figures.clearRate),
        ]
        for name in services {
            json["rss_before_kb_\(name)"] = figures.residentBefore[name] ?? 0
            json["rss_peak_kb_\(name)"] = figures.residentPeak[name] ?? 0
        }
        return (lines, json)
    }

    private static func megabytes(_ kilobytes: Int?) -> String { ReportText.fixed(Double(kilobytes ?? 0) / 1024, 1) }
}

/// Resident memory of a process from `/proc/PID/status`.
enum ProcessMemory {
    /// The `field` (`VmRSS`, `VmHWM`) of `pid` in kB; 0 when it cannot be read.
    static func kilobytes(pid: Int32, _ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1).split(whereSeparator: \.isWhitespace).first ?? "") ?? 0
        }
        return 0
    }

    /// Sets `VmHWM` back to the current `VmRSS` (`clear_refs` 5), so that it is the peak from now.
    static func resetPeak(pid: Int32) {
        try? "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
    }

    /// Reads `VmRSS` every 50 ms on a thread of its own, keeping the largest: the peak even where
    /// `VmHWM` cannot be reset.
    final class Sampler: Sendable {
        private let peaks = Shared<[String: Int]>([:])
        private let running = Shared(true)
        private let done = DispatchSemaphore(value: 0)

        init(_ processes: [(String, Int32)]) {
            let thread = Thread { [peaks, running, done] in
                while running.withLock({ $0 }) {
                    for (name, pid) in processes {
                        let now = ProcessMemory.kilobytes(pid: pid, "VmRSS")
                        peaks.withLock { $0[name] = max($0[name] ?? 0, now) }
                    }
                    usleep(50_000)
                }
                done.signal()
            }
            thread.start()
        }

        /// Stops sampling; the peak of each process.
        func stop() -> [String: Int] {
            running.withLock { $0 = false }
            done.wait()
            return peaks.withLock { $0 }
        }
    }
}
