import BenchSupport
import Dispatch
import EntitlementService
import Foundation
import HTTP
import Model
import Observability
import ProtoJSON
import RPC
import Sockets
import Synchronization
import Wire

// webhookbench: webhook delivery from the ledger's event log to a local receiver, beside `wrk`
// posting the same body to the same receiver. See Options.helpText, or run with --help.

struct Options: BenchCommandOptions {
    var ledgerPath = ""
    var events = 20_000
    var accounts = 1000
    var seconds = 10
    var showHelp = false

    static let helpText = """
        usage: webhookbench --ledger PATH [--events N] [--accounts N] [--seconds S]

        Starts the ledger (SQLite in a temporary directory) and a receiver on loopback that
        answers 200, appends N events of N/accounts accounts to the event log, and measures:
        the rate at which one deliverer (16 in flight, as WEBHOOK_MAX_IN_FLIGHT's default)
        delivers that backlog, signed, in order per account, with its progress recorded in the
        ledger; beside it, `wrk` posting the same body to the same receiver with 16 connections
        (the receiver's and loopback HTTP's ceiling); then the lag (arrival time minus the
        event's recorded time) while events are appended at half the measured rate for S
        seconds.

          --ledger PATH     the ledger executable; required
          --events N        the backlog (default 20000; 1000…1000000)
          --accounts N      accounts the events are spread over (default 1000)
          --seconds S       the steady-rate phase (default 10; 2…120)
        """

    init(arguments: [String]) throws(BenchError) {
        var rest = BenchArguments(arguments)
        while let flag = rest.nextFlag() {
            switch flag {
            case "--ledger": ledgerPath = try rest.value(for: flag)
            case "--events": events = try rest.integer(for: flag, in: 1000...1_000_000)
            case "--accounts": accounts = try rest.integer(for: flag, in: 1...1_000_000)
            case "--seconds": seconds = try rest.integer(for: flag, in: 2...120)
            case "--help", "-h": showHelp = true
            default: throw BenchError("unknown option \(flag)")
            }
        }
        guard showHelp || !ledgerPath.isEmpty else { throw BenchError("--ledger PATH is required") }
    }
}

/// Answers 200 to every POST and keeps each arrival's lag behind the event's recorded time.
final class Receiver: Sendable {
    final class Counts: Sendable {
        let arrived = Atomic<Int>(0)
        let lags = Mutex<[Int64]>([])
    }
    let server: HTTPServer
    let counts = Counts()
    var arrived: Int { counts.arrived.load(ordering: .relaxed) }
    func clearLags() { counts.lags.withLock { $0 = [] } }
    var lags: [Int64] { counts.lags.withLock { $0 } }

    init() throws(BenchError) {
        server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "receiver", sink: .capturing()))
        server.route("POST", "/hooks") { [counts] request in
            counts.arrived.add(1, ordering: .relaxed)
            let body = String(decoding: request.body, as: UTF8.self)
            if let range = body.range(of: #""recordedTimeMs":""#) {
                let digits = body[range.upperBound...].prefix { $0.isNumber }
                if let recorded = Int64(digits) {
                    let lag = Int64(Date().timeIntervalSince1970 * 1000) - recorded
                    counts.lags.withLock { $0.append(lag) }
                }
            }
            return HTTPResponse(status: 200)
        }
        do { try server.start() } catch { throw BenchError("the receiver did not start: \(error)") }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(server.port)/hooks")! }
}

/// Runs `body` on a task and waits for it here (the main thread, not the cooperative pool).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws(BenchError) -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            let value = try await body()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    switch result.withLock({ $0 })! {
    case .success(let value): return value
    case .failure(let error): throw BenchError("\(error)")
    }
}

func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

func event(_ index: Int, accounts: Int) -> Event {
    let account = "acct-\(index % accounts)"
    let key = SubscriptionKey(store: .apple, environment: .production, storeID: "\(2_000_000_000 + index % accounts)")
    return Event(
        id: "evt_\(index + 1)_0", type: "subscription.renewed", accountID: account, key: key,
        position: UInt64(index + 1), storeTimeMilliseconds: now(), recordedTimeMilliseconds: now(),
        subscription: Subscription(
            key: key, accountID: account, productID: "com.example.pro.monthly", productKind: .autoRenewable,
            state: .active, ownership: .purchased, purchaseTimeMilliseconds: now(),
            expiresTimeMilliseconds: now() + 30 * 86_400_000, autoRenew: true, storeTimeMilliseconds: now(),
            bundleOrPackage: "com.example.app", storefront: "USA", priceMicros: 4_990_000, currency: "USD"))
}

func append(_ client: RPCClient, _ events: [Event]) async throws {
    for start in stride(from: 0, to: events.count, by: 1000) {
        _ = try await client.call(
            LedgerRPC.appendEvents,
            AppendEventsRequest(
                owner: "webhookbench", events: Array(events[start..<min(start + 1000, events.count)]),
                throughFeedPosition: 1))
    }
}

func percentile(_ sorted: [Int64], _ p: Double) -> Int64 {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

BenchCommand.main(Options.self, name: "webhookbench") { options throws(BenchError) in
    BenchCommand.warnIfBusy("webhookbench")
    let directory = try TemporaryDirectory("webhookbench")
    defer { directory.remove() }
    let ledger = try LedgerProcess(
        executable: options.ledgerPath, settings: ["LEDGER_SQLITE_PATH": directory.file("ledger.sqlite")],
        directory: directory.path)
    defer { ledger.child.stop() }
    let receiver = try Receiver()
    defer { receiver.server.stop() }
    let client: RPCClient
    do { client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: ledger.port)]) } catch {
        throw BenchError("\(error)")
    }
    let secret = "whsec_" + Data((0..<32).map { UInt8($0) }).base64EncodedString()
    let endpoint = try blocking {
        try WebhookEndpoints.parse(
            Array(#"{"endpoints": [{"name": "bench", "url": "\#(receiver.url)", "secrets": ["\#(secret)"]}]}"#.utf8)
        )[0]
    }
    let count = options.events
    let accounts = options.accounts
    try blocking {
        _ = try await client.call(
            LedgerRPC.acquireLease, AcquireLeaseRequest(name: "events", owner: "webhookbench", ttlMilliseconds: 60_000))
        try await append(client, (0..<count).map { event($0, accounts: accounts) })
    }
    // The deliverer, run as the service runs it: its lease renewed, a round every 50 ms.
    let deliverer = WebhookDeliverer(
        endpoint: endpoint, client: client, owner: "webhookbench-deliverer", leaseMilliseconds: 6000,
        logger: Logger(service: "webhookbench", sink: .capturing()))
    let loop = Task.detached {
        var renewed = ContinuousClock.now - .seconds(10)
        while !Task.isCancelled {
            if ContinuousClock.now - renewed > .seconds(2) {
                await deliverer.renewLease()
                renewed = ContinuousClock.now
            }
            await deliverer.step()
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
    defer { loop.cancel() }
    let started = ContinuousClock.now
    while receiver.arrived < count {
        usleep(5000)
        guard ContinuousClock.now - started < .seconds(600) else {
            throw BenchError("the backlog was not delivered in 10 minutes")
        }
    }
    let elapsed = ContinuousClock.now - started
    let backlogRate =
        Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    receiver.clearLags()

    // The lag at half that rate: a batch every 100 ms.
    let rate = max(10, Int(backlogRate / 2))
    let perBatch = max(1, rate / 10)
    var appended = 0
    let steadyStart = ContinuousClock.now
    while ContinuousClock.now - steadyStart < .seconds(options.seconds) {
        let batch = (0..<perBatch).map { event(count + appended + $0, accounts: accounts) }
        try blocking { try await append(client, batch) }
        appended += perBatch
        let due = steadyStart + .milliseconds(100 * (appended / perBatch))
        if due > ContinuousClock.now {
            Thread.sleep(forTimeInterval: Double((due - ContinuousClock.now).components.attoseconds) / 1e18)
        }
    }
    let total = count + appended
    let drain = ContinuousClock.now
    while receiver.arrived < total, ContinuousClock.now - drain < .seconds(60) { usleep(5000) }
    let lags = receiver.lags.sorted()

    // The reference: wrk posting the same body, 16 connections.
    let sample: String
    do {
        sample = try ProtoJSON.decodeToJSON(
            event(0, accounts: accounts).serialized(), as: "subscriptions.events.v1.Event", pretty: false)
    } catch { throw BenchError("\(error)") }
    let script = try directory.write(
        "post.lua",
        """
        wrk.method = "POST"
        wrk.headers["Content-Type"] = "application/json"
        wrk.body = [==[\(sample)]==]
        done = function(summary, latency, requests)
          io.write(string.format("post requests %d seconds %f\\n", summary.requests, summary.duration / 1e6))
        end
        """)
    let (status, output) = try ChildProcess.runToCompletion(
        "wrk", ["-t1", "-c16", "-d5s", "-s", script, receiver.url.absoluteString], limit: .seconds(40))
    guard status == 0,
        let line = output.split(separator: "\n").first(where: { $0.hasPrefix("post requests ") }),
        case let numbers = line.split(separator: " ").compactMap({ Double($0) }), numbers.count == 2, numbers[1] > 0
    else { throw BenchError("wrk printed no figures: \(output)") }
    let referenceRate = numbers[0] / numbers[1]
    print("webhook delivery, one endpoint, 16 in flight, \(count) events of \(accounts) accounts")
    print(String(format: "  backlog delivered          %10.0f events/s", backlogRate))
    print(
        String(
            format: "  wrk POST, same body, -c16  %10.0f requests/s   (delivery %.2f×)", referenceRate,
            backlogRate / referenceRate))
    print(
        "  lag at \(rate) events/s for \(options.seconds) s: p50 \(percentile(lags, 0.5)) ms, p99 \(percentile(lags, 0.99)) ms, max \(lags.last ?? 0) ms (\(lags.count) events)"
    )
    print(
        #"{"backlog_events_per_second":\#(Int(backlogRate)),"wrk_post_per_second":\#(Int(referenceRate)),"steady_rate":\#(rate),"lag_p50_ms":\#(percentile(lags, 0.5)),"lag_p99_ms":\#(percentile(lags, 0.99)),"lag_max_ms":\#(lags.last ?? 0)}"#
    )
    return 0
}
