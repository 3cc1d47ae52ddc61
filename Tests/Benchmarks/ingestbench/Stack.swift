import BenchSupport
import Foundation
import Glibc
import HTTP
import HTTPClient
import Observability
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Runs `body` on a detached task and waits for its result on this thread.
func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws(BenchError) -> T {
    let box = Shared<Result<T, BenchError>?>(nil)
    let finished = DispatchSemaphore(value: 0)
    Task.detached {
        let outcome: Result<T, BenchError>
        do { outcome = .success(try await body()) } catch {
            outcome = .failure(error as? BenchError ?? BenchError("\(error)"))
        }
        box.withLock { $0 = outcome }
        finished.signal()
    }
    finished.wait()
    return try box.withLock { $0 }!.get()
}

/// A value behind a lock that closures may share.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

/// Plain HTTP on loopback for the benchmark's own calls (control surface, notifications,
/// CheckAccess, RestorePurchases).
/// One transport a lane: a closed loop's worker keeps its own connection, so the connections
/// from this address stay as many as the requests in flight (the services refuse more than
/// `HTTP_MAX_CONNECTIONS_PER_ADDRESS`). Requests without a lane rotate over the lanes.
struct Loopback: Sendable {
    private let transports: [HTTPClientTransport]
    private let turn = Shared(0)

    /// `timeout` in seconds: the simulator's clock moves take long with many subscriptions.
    init(lanes: Int = 1, timeout: TimeInterval = 120) {
        transports = (0..<max(1, lanes)).map { _ in
            HTTPClientTransport(requestTimeout: timeout, maxResponseBytes: 1 << 30)
        }
    }

    private func transport(_ lane: Int?) -> HTTPClientTransport {
        if let lane { return transports[lane % transports.count] }
        let count = transports.count
        return transports[
            turn.withLock { turn in
                turn = (turn + 1) % count
                return turn
            }]
    }

    func post(_ url: String, _ body: Data, headers: [String: String] = [:], lane: Int? = nil) async throws(BenchError)
        -> (
            status: Int, body: Data
        )
    {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        switch await transport(lane).perform(request) {
        case .success(let response): return (response.status, response.body)
        case .failure(let failure): throw BenchError("POST \(url): \(failure)")
        }
    }

    func get(_ url: String) async throws(BenchError) -> [String: Any] {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "GET"
        request.setValue("close", forHTTPHeaderField: "Connection")
        guard case .success(let response) = await transport(nil).perform(request), response.status == 200 else {
            throw BenchError("GET \(url) failed")
        }
        return try Self.object(response.body, from: url)
    }

    /// POSTs a JSON object and answers the JSON object of a 200. Without `reuse` the connection
    /// is closed after the answer: a kept connection idle longer than the server's idle timeout
    /// may be closed under the next request, and a control call must not be sent twice.
    func call(_ url: String, _ fields: [String: Any], reuse: Bool = false, lane: Int? = nil) async throws(BenchError)
        -> [String: Any]
    {
        let body: Data
        do { body = try JSONSerialization.data(withJSONObject: fields) } catch { throw BenchError("\(error)") }
        let (status, answer) = try await post(url, body, headers: reuse ? [:] : ["Connection": "close"], lane: lane)
        guard status == 200 else {
            throw BenchError("POST \(url) answered \(status): \(String(decoding: answer.prefix(500), as: UTF8.self))")
        }
        return try Self.object(answer, from: url)
    }

    static func object(_ data: Data, from url: String) throws(BenchError) -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw BenchError("\(url) answered no JSON object")
        }
        return object
    }
}

/// The webhook endpoint: answers 200 and keeps, per account, when its `subscription.renewed`
/// events arrived.
final class WebhookReceiver: Sendable {
    struct Arrivals: Sendable {
        var total = 0
        var renewedByStore: [String: Int] = [:]
        /// Arrival instants of each account's renewal events, in order.
        var renewedAt: [String: [ContinuousClock.Instant]] = [:]
    }
    let server: HTTPServer
    let arrivals = Shared(Arrivals())
    /// Broadcast at each arrival, for `wait(until:_:)` and `settle`.
    private let arrived = NSCondition()

    init() throws(BenchError) {
        server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "receiver", sink: .capturing()))
        server.route("POST", "/hooks") { [arrivals, arrived] request in
            let at = ContinuousClock.now
            let event = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
            let account = event?["accountId"] as? String ?? ""
            let renewed = event?["type"] as? String == "subscription.renewed"
            arrivals.withLock { arrivals in
                arrivals.total += 1
                guard renewed else { return }
                let store = String(account.prefix { $0 != "-" })
                arrivals.renewedByStore[store, default: 0] += 1
                arrivals.renewedAt[account, default: []].append(at)
            }
            arrived.lock()
            arrived.broadcast()
            arrived.unlock()
            return HTTPResponse(status: 200)
        }
        do { try server.start() } catch { throw BenchError("the webhook receiver did not start: \(error)") }
    }

    var url: String { "http://127.0.0.1:\(server.port)/hooks" }
    var total: Int { arrivals.withLock { $0.total } }
    func renewed(_ store: String) -> Int { arrivals.withLock { $0.renewedByStore[store] ?? 0 } }
    func renewals(of account: String) -> [ContinuousClock.Instant] { arrivals.withLock { $0.renewedAt[account] ?? [] } }

    /// Waits, woken by each arrival, until `done` holds of what has arrived or `deadline` passes;
    /// whether it held.
    func wait(until deadline: ContinuousClock.Instant, _ done: (Arrivals) -> Bool) -> Bool {
        arrived.lock()
        defer { arrived.unlock() }
        while !done(arrivals.withLock { $0 }) {
            let left = deadline - ContinuousClock.now
            guard left > .zero, arrived.wait(until: Date().addingTimeInterval(Self.seconds(left))) else {
                return done(arrivals.withLock { $0 })
            }
        }
        return true
    }

    /// Waits until no event has arrived for `quiet` (each arrival starts the quiet again), at most
    /// `limit`.
    func settle(quiet: Duration = .seconds(2), limit: Duration = .seconds(600)) {
        let deadline = ContinuousClock.now + limit
        arrived.lock()
        defer { arrived.unlock() }
        while ContinuousClock.now < deadline {
            let wait = min(quiet, deadline - ContinuousClock.now)
            // No arrival within `quiet`: settled.
            guard arrived.wait(until: Date().addingTimeInterval(Self.seconds(wait))) else { return }
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        TimeInterval(duration.components.seconds) + TimeInterval(duration.components.attoseconds) / 1e18
    }
}

/// The store simulator and the three services on free loopback ports, the ledger on SQLite in a
/// temporary directory or on the PostgreSQL database `postgresURL` names, every service on the
/// simulator's clock, the event log delivering to `receiver`.
final class Stack {
    let storesim: ChildProcess
    let storesimControl: String
    let ledger: ChildProcess
    let verifier: ChildProcess
    let verifierHTTP: Int
    let entitlement: ChildProcess
    let entitlementHTTP: Int

    static let start = "1767225600000"  // 2026-01-01T00:00:00Z

    init(binaries: String, directory: TemporaryDirectory, receiver: WebhookReceiver, postgresURL: String? = nil)
        throws(BenchError)
    {
        let simDirectory = directory.file("storesim")
        let logPath = directory.file("storesim.log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["STORESIM_DIR"] = simDirectory
        environment["STORESIM_START"] = Self.start
        environment["STORESIM_LISTEN"] = "127.0.0.1:0"
        environment["STORESIM_CONTROL_LISTEN"] = "127.0.0.1:0"
        storesim = try ChildProcess(
            name: "storesim", executable: binaries + "/storesim", arguments: [], environment: environment,
            directory: directory.path, output: FileHandle(forWritingAtPath: logPath))
        var control: Int?
        let deadline = ContinuousClock.now + .seconds(60)
        while control == nil, ContinuousClock.now < deadline, storesim.isRunning {
            usleep(50_000)
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            for line in log.split(separator: "\n") where line.contains("storesim ready") {
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                control = (object?["control_port"] as? String).flatMap { Int($0) }
            }
            if control != nil && !FileManager.default.fileExists(atPath: simDirectory + "/verifier.env") {
                control = nil
            }
        }
        guard let control else { throw BenchError("storesim did not start; see its log:\n\(Self.read(logPath))") }
        storesimControl = "http://127.0.0.1:\(control)/control"

        let clock = simDirectory + "/clock"
        let policy = try directory.write(
            "policy.conf", "capability pro\n  apple com.example.pro.monthly\n  google pro_sub\n")
        let webhooks = try directory.write(
            "webhooks.json",
            #"{"endpoints": [{"name": "ingestbench", "url": "\#(receiver.url)", "secrets": ["whsec_aW5nZXN0YmVuY2gtd2ViaG9vay1zZWNyZXQtMzItYnl0ZXM="]}]}"#
        )
        let store =
            postgresURL.map { ["LEDGER_STORE": "postgres", "LEDGER_POSTGRES_URL": $0] }
            ?? ["LEDGER_SQLITE_PATH": directory.file("ledger.sqlite")]
        let ledgerLaunch = try ServiceLog.launch(
            binaries + "/ledger", clearing: ["LEDGER_STORE", "LEDGER_SQLITE_PATH", "LEDGER_POSTGRES_URL"],
            settings: store.merging(["CLOCK_FILE": clock]) { _, new in new }, directory: directory.path,
            limit: .seconds(60))
        ledger = ledgerLaunch.child
        let ledgerAddress = "127.0.0.1:\(ledgerLaunch.port)"
        var verifierSettings = try Self.settings(simDirectory + "/verifier.env")
        verifierSettings.merge(
            [
                "LEDGER_ADDR": ledgerAddress, "CLOCK_FILE": clock,
                // Notifications alone renew: reconciliation would read the renewals first.
                "APPLE_RECONCILE_INTERVAL": "0", "GOOGLE_RECONCILE_INTERVAL": "0",
            ]
        ) { _, new in new }
        let verifierLaunch = try ServiceLog.launch(
            binaries + "/verifier", settings: verifierSettings, directory: directory.path, limit: .seconds(60))
        verifier = verifierLaunch.child
        guard let verifierHTTP = verifierLaunch.httpPort else { throw BenchError("the verifier logged no HTTP port") }
        self.verifierHTTP = verifierHTTP
        let entitlementLaunch = try ServiceLog.launch(
            binaries + "/entitlement",
            settings: [
                "LEDGER_ADDR": ledgerAddress, "CLOCK_FILE": clock, "ENTITLEMENT_POLICY_FILE": policy,
                "EVENT_LOG": "true", "WEBHOOK_ENDPOINTS_FILE": webhooks,
            ], directory: directory.path, limit: .seconds(120))
        entitlement = entitlementLaunch.child
        guard let entitlementHTTP = entitlementLaunch.httpPort else {
            throw BenchError("the entitlement service logged no HTTP port")
        }
        self.entitlementHTTP = entitlementHTTP
    }

    /// Stops the services, then the simulator.
    func stop() {
        for child in [verifier, entitlement, ledger, storesim] { child.stop() }
    }

    /// CPU seconds of each process so far.
    func cpu() -> [String: Double] {
        var seconds: [String: Double] = [:]
        for (name, child) in [
            ("verifier", verifier), ("ledger", ledger), ("entitlement", entitlement), ("storesim", storesim),
        ] {
            seconds[name] = ProcessCPU.seconds(pid: child.pid) ?? 0
        }
        return seconds
    }

    private static func read(_ path: String) -> String {
        String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").suffix(2000))
    }

    /// `NAME=value` lines.
    private static func settings(_ path: String) throws(BenchError) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw BenchError("cannot read \(path)")
        }
        var settings: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return settings
    }
}
