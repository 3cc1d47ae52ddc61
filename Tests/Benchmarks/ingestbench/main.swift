import BenchSupport
import Foundation
import HTTP

// ingestbench: a renewal wave of store notifications through the whole system. See
// Options.helpText, or run with --help.

struct Options: BenchCommandOptions {
    var binaries = ".build/release"
    var subscriptions = 10_000
    var concurrency = 16
    var latencySeconds = 10
    var overloadSeconds = 10
    var opensslSeconds = 3
    var postgres = false
    var postgresScript = "scripts/postgres-test-server"
    var postgresBin = "/usr/lib/postgresql/15/bin"
    var showHelp = false

    static let helpText = """
        usage: ingestbench [--bin DIR] [--subscriptions N] [--concurrency C] [--latency-seconds S]
                           [--openssl-seconds S] [--postgres [--postgres-script PATH] [--postgres-bin DIR]]

        Starts storesim, the ledger (SQLite, or PostgreSQL with --postgres), the verifier and the
        entitlement service (EVENT_LOG
        on, one webhook endpoint: a receiver in this process), all on the simulator's clock.
        Buys N subscriptions per store (buy-batch) and links each to an account
        (RestorePurchases), moves the clock a month and takes the renewal notifications from the
        simulator undelivered (App Store DID_RENEW, Play RTDN 2 with its push token), then per
        store posts them to the verifier, C at a time, and waits until the webhook receiver has
        every account's subscription.renewed: notifications a second end to end, CPU seconds per
        notification of each service, store API calls per notification. A second month's
        notifications are then posted at half that rate for S seconds: the latency from the
        post to CheckAccess showing the new period and to the webhook's arrival. A third
        month's are then posted at twice the closed loop's rate for O seconds, each refused one
        (503) posted again after its Retry-After: refusals, none lost, the services' peak
        resident memory, and how long the backlog took to clear. Beside it, the floor: openssl
        speed's ECDSA and RSA verifies and one durable append of the raw engine at the same batch
        (C rows a transaction): sqlite3, or with --postgres pgbench on the same server; and the
        floor of the shape: the floor plus the fewest exchanges between processes a notification
        makes, each at its reference's cost (redis-benchmark against redis-server, wrk against nginx).

          --bin DIR              where storesim, ledger, verifier and entitlement are (.build/release)
          --subscriptions N      subscriptions per store (default 10000; 100…100000)
          --concurrency C        notifications in flight in the closed loop (default 16)
          --latency-seconds S    the open-loop phase per store (default 10; 2…120)
          --overload-seconds O   the overload phase per store (default 10; 2…120)
          --openssl-seconds S    each openssl speed run (default 3)
          --postgres             the ledger on a throwaway PostgreSQL server this starts (fsync and
                                 synchronous_commit on), the floor's append by pgbench on it
          --postgres-script PATH the server's script (default scripts/postgres-test-server; run
                                 from the repository root)
          --postgres-bin DIR     where pgbench and psql are looked for first
                                 (default /usr/lib/postgresql/15/bin; then PATH)
        """

    init(arguments: [String]) throws(BenchError) {
        var rest = BenchArguments(arguments)
        while let flag = rest.nextFlag() {
            switch flag {
            case "--bin": binaries = try rest.value(for: flag)
            case "--subscriptions": subscriptions = try rest.integer(for: flag, in: 100...100_000)
            case "--concurrency": concurrency = try rest.integer(for: flag, in: 1...256)
            case "--latency-seconds": latencySeconds = try rest.integer(for: flag, in: 2...120)
            case "--overload-seconds": overloadSeconds = try rest.integer(for: flag, in: 2...120)
            case "--openssl-seconds": opensslSeconds = try rest.integer(for: flag, in: 1...30)
            case "--postgres": postgres = true
            case "--postgres-script": postgresScript = try rest.value(for: flag)
            case "--postgres-bin": postgresBin = try rest.value(for: flag)
            case "--help", "-h": showHelp = true
            default: throw BenchError("unknown option \(flag)")
            }
        }
    }
}

/// One store's figures.
struct StoreFigures {
    var store = ""
    var rate = 0.0
    var acceptedRate = 0.0
    var rejected = 0
    var cpuPerNotification: [String: Double] = [:]
    var apiCalls: [String: Double] = [:]
    var openRate = 0.0
    var checkLatency: [Double] = []
    var webhookLatency: [Double] = []
    var floorSeconds = 0.0
    var overload = OverloadFigures()
}

BenchCommand.main(Options.self, name: "ingestbench") { options throws(BenchError) in
    BenchCommand.warnIfBusy("ingestbench")
    let directory = try TemporaryDirectory("ingestbench")
    defer { directory.remove() }
    let receiver = try WebhookReceiver()
    defer { receiver.server.stop() }
    // With --postgres: the ledger's server, and the client programs of the floor's append on it.
    var postgres: (server: PostgresServer, tools: PostgresTools)?
    if options.postgres {
        let tools = try PostgresTools(preferred: options.postgresBin)
        postgres = (try PostgresServer(script: options.postgresScript, name: "ingestbench"), tools)
    }
    defer { postgres?.server.stop() }
    let stack = try Stack(
        binaries: options.binaries, directory: directory, receiver: receiver, postgresURL: postgres?.server.url)
    defer { stack.stop() }
    // A move of the simulator's clock steps every subscription due (a month: each of 2N once).
    let http = Loopback(timeout: 3600)
    let control = stack.storesimControl
    let verifier = "http://127.0.0.1:\(stack.verifierHTTP)"
    let entitlement = "http://127.0.0.1:\(stack.entitlementHTTP)"
    let count = options.subscriptions
    let concurrency = options.concurrency

    // 1. N subscriptions per store, bought before the backend knew of them, then linked.
    let creation = ContinuousClock.now
    var ids: [String: [String]] = [:]
    for store in [Store.apple, Store.google] {
        var bought: [String] = []
        while bought.count < count {
            let chunk = min(10_000, count - bought.count)
            bought += try waitFor {
                let answer = try await http.call(
                    "\(control)/\(store.name)/buy-batch", ["productId": store.product, "count": chunk])
                return answer[store.idField] as? [String] ?? []
            }
        }
        ids[store.name] = bought
        let linked = bought
        let linker = Loopback(lanes: concurrency)
        try waitFor {
            try await closedLoop(count, concurrency: concurrency) { worker, index throws(BenchError) in
                _ = try await linker.call(
                    "\(verifier)/subscriptions.verifier.v1.Verifier/RestorePurchases",
                    store.restore(linked[index], index: index), reuse: true, lane: worker)
            }
        }
    }
    receiver.settle()
    BenchCommand.note(
        "ingestbench",
        "\(count) subscriptions per store bought and linked in \(ReportText.fixed(seconds(ContinuousClock.now - creation), 1)) s"
    )

    /// Moves the simulator a month on and takes each store's notifications, undelivered.
    func renewalWave() throws(BenchError) -> [String: [StoreNotification]] {
        let moving = ContinuousClock.now
        try waitFor { _ = try await http.call("\(control)/clock/advance", ["by": "+32d"]) }
        BenchCommand.note(
            "ingestbench", "clock moved a month in \(ReportText.fixed(seconds(ContinuousClock.now - moving), 1)) s")
        var taken: [String: [StoreNotification]] = [:]
        for store in [Store.apple, Store.google] {
            taken[store.name] = try waitFor {
                let answer = try await http.call("\(control)/\(store.name)/take-undelivered", [:])
                return (answer["notifications"] as? [[String: Any]] ?? []).map { item in
                    StoreNotification(
                        body: Data((item["body"] as? String ?? "").utf8),
                        headers: item["headers"] as? [String: String] ?? [:])
                }
            }
            guard taken[store.name]!.count == count else {
                throw BenchError("\(store.name): \(taken[store.name]!.count) renewal notifications, not \(count)")
            }
        }
        return taken
    }

    func apiCalls(_ store: Store) throws(BenchError) -> [String: Int] {
        try waitFor {
            let answer = try await http.get("\(control)/\(store.name)/api-calls")
            var calls: [String: Int] = [:]
            for (path, number) in answer["byPath"] as? [String: Int] ?? [:] {
                calls[endpoint(path), default: 0] += number
            }
            return calls
        }
    }

    // 2. The closed loop, one store at a time.
    var figures: [String: StoreFigures] = [:]
    let wave = try renewalWave()
    for store in [Store.apple, Store.google] {
        let notifications = wave[store.name]!
        // Fresh connections for each phase: none idle past the server's timeout (Loopback.call).
        let poster = Loopback(lanes: concurrency)
        let baseline = receiver.renewed(store.name)
        let callsBefore = try apiCalls(store)
        let cpuBefore = stack.cpu()
        let rejected = Shared(0)
        let started = ContinuousClock.now
        try waitFor {
            try await closedLoop(count, concurrency: concurrency) { worker, index throws(BenchError) in
                let item = notifications[index]
                // A refusal (503) is posted again after its Retry-After, as a store delivers again.
                while true {
                    let (status, body) = try await poster.post(
                        verifier + store.notificationPath, item.body, headers: item.headers, lane: worker)
                    if (200..<300).contains(status) { return }
                    guard status == 503 else {
                        throw BenchError("\(store.name): a notification was answered \(status)")
                    }
                    rejected.withLock { $0 += 1 }
                    let answer = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
                    let wait = answer?["retry_after_seconds"] as? Int ?? 1
                    do { try await Task.sleep(for: .seconds(wait)) } catch { throw BenchError("cancelled") }
                }
            }
        }
        let accepted = ContinuousClock.now - started
        let refused = rejected.withLock { $0 }
        while receiver.renewed(store.name) < baseline + count {
            usleep(2000)
            guard ContinuousClock.now - started < .seconds(1200) else {
                throw BenchError(
                    "\(store.name): \(receiver.renewed(store.name) - baseline) of \(count) renewals reached the webhook in 20 minutes"
                )
            }
        }
        let elapsed = ContinuousClock.now - started
        let cpuAfter = stack.cpu()
        let callsAfter = try apiCalls(store)
        var result = StoreFigures(store: store.name)
        result.rate = Double(count) / seconds(elapsed)
        result.acceptedRate = Double(count) / seconds(accepted)
        result.rejected = refused
        for (name, after) in cpuAfter {
            result.cpuPerNotification[name] = (after - (cpuBefore[name] ?? 0)) / Double(count)
        }
        for (path, after) in callsAfter where after > callsBefore[path] ?? 0 {
            result.apiCalls[path] = Double(after - (callsBefore[path] ?? 0)) / Double(count)
        }
        figures[store.name] = result
        BenchCommand.note(
            "ingestbench",
            "\(store.name): \(count) notifications end to end at \(ReportText.fixed(result.rate, 0))/s (\(result.rejected) refused)"
        )
    }

    // 3. Latency at half the rate, open loop, on the next month's notifications.
    let second = try renewalWave()
    for store in [Store.apple, Store.google] {
        // The account of each notification, by the subscription it names.
        var accountIndex: [String: Int] = [:]
        for (index, id) in ids[store.name]!.enumerated() { accountIndex[id] = index }
        let notifications = try second[store.name]!.map { item throws(BenchError) in
            guard let subject = item.subject, let index = accountIndex[subject] else {
                throw BenchError("\(store.name): a renewal notification names no subscription bought here")
            }
            return (item, index)
        }
        // Eight sessions of at most six connections each: under the services' 64 per address.
        let client = Loopback(lanes: 8)
        let rate = max(1, figures[store.name]!.rate / 2)
        let total = min(count, Int(rate * Double(options.latencySeconds)))
        let checks = Shared<[Double]>([])
        let hooks = Shared<[Double]>([])
        try waitFor {
            try await withThrowingTaskGroup(of: Void.self) { group in
                let start = ContinuousClock.now
                for index in 0..<total {
                    let due = start + .seconds(Double(index) / rate)
                    if due > ContinuousClock.now { try await Task.sleep(until: due, clock: .continuous) }
                    let (item, owner) = notifications[index]
                    group.addTask {
                        let account = store.account(owner)
                        let check = "\(entitlement)/subscriptions.entitlement.v1.Entitlement/CheckAccess"
                        let question: [String: Any] = ["accountId": account, "capability": "pro"]
                        let before =
                            Int64(try await client.call(check, question, reuse: true)["untilMs"] as? String ?? "0") ?? 0
                        let seen = receiver.renewals(of: account).count
                        let posted = ContinuousClock.now
                        _ = try await client.post(verifier + store.notificationPath, item.body, headers: item.headers)
                        while Int64(try await client.call(check, question, reuse: true)["untilMs"] as? String ?? "0")
                            ?? 0 <= before
                        {
                            try await Task.sleep(for: .milliseconds(5))
                            guard ContinuousClock.now - posted < .seconds(60) else {
                                throw BenchError("\(account): no new period")
                            }
                        }
                        let visible = ContinuousClock.now
                        checks.withLock { $0.append(seconds(visible - posted) * 1000) }
                        while receiver.renewals(of: account).count <= seen {
                            try await Task.sleep(for: .milliseconds(1))
                            guard ContinuousClock.now - posted < .seconds(60) else {
                                throw BenchError("\(account): no webhook")
                            }
                        }
                        let arrived = receiver.renewals(of: account).last!
                        hooks.withLock { $0.append(seconds(arrived - posted) * 1000) }
                    }
                }
                try await group.waitForAll()
            }
        }
        figures[store.name]!.openRate = rate
        figures[store.name]!.checkLatency = checks.withLock { $0 }.sorted()
        figures[store.name]!.webhookLatency = hooks.withLock { $0 }.sorted()
    }
    // 3b. Overload: twice the sustainable rate, refused ones retried after their Retry-After.
    let third = try renewalWave()
    for store in [Store.apple, Store.google] {
        figures[store.name]!.overload = try Overload.run(
            store: store, wave: third[store.name]!, ids: ids[store.name]!, rate: 2 * figures[store.name]!.rate,
            for: options.overloadSeconds, stack: stack, receiver: receiver, verifier: verifier, entitlement: entitlement
        )
    }
    stack.stop()

    // 4. The floor, measured in the same run.
    let floor = try Floor.measure(
        seconds: options.opensslSeconds, batch: concurrency, directory: directory,
        postgres: postgres.map { ($0.server.port, $0.tools) })
    figures["apple"]!.floorSeconds = floor.appleSeconds
    figures["google"]!.floorSeconds = floor.googleSeconds
    let costs = try ExchangeCosts.measure(directory: directory, seconds: options.opensslSeconds)
    Report.print(figures: [figures["apple"]!, figures["google"]!], floor: floor, costs: costs, options: options)
    return 0
}
