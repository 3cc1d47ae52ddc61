import Config
import EntitlementService
import Foundation
import Glibc
import LedgerService
import Model
import RPC
import Sockets
import TestSupport
import Testing
import Wire

/// A ledger on a SQLite file and a fixed loopback port (so it can be restarted under the same
/// address), entitlement services following it, and the calls the tests make.
final class EntitlementStack: @unchecked Sendable {  // used from one test task at a time
    static let policy = """
        capability pro
          apple com.example.pro.monthly
          apple com.example.premium.monthly
          google pro_sub
          google premium_sub
        """

    let directory: URL
    let ledgerPort: Int
    /// The ledger's process; nil for a ledger in this test's process (`ledgerHost`).
    var ledger: ServiceProcess!
    /// The ledger in this test's process, when the stack runs it there.
    private(set) var ledgerHost: InProcessService?
    var ledgerClient: RPCClient
    let policyPath: String
    /// Extra settings of the ledger (`LEDGER_TRANSFER_POLICY`, say), kept across restarts.
    let ledgerEnvironment: [String: String]

    /// A stack whose entitlement services read `policy` (a policy file's text); with
    /// `inProcess`, its ledger runs in this test's process (it cannot then be killed).
    init(ledgerEnvironment: [String: String] = [:], policy: String = EntitlementStack.policy, inProcess: Bool = false)
        async throws
    {
        self.ledgerEnvironment = ledgerEnvironment
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("entitlement-stack-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        policyPath = directory.appendingPathComponent("policy.conf").path
        try Data(policy.utf8).write(to: URL(fileURLWithPath: policyPath))
        if inProcess {
            let host = try await InProcessService(
                LedgerService.make,
                environment: ledgerEnvironment.merging([
                    "LEDGER_SQLITE_PATH": directory.appendingPathComponent("ledger.sqlite").path
                ]) { old, _ in old })
            ledgerHost = host
            ledgerPort = host.rpcPort()
            ledgerClient = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: ledgerPort)])
            return
        }
        // A port free a moment ago may be taken by the time the ledger binds it (another stack
        // chose it too): then the ledger says so and exits, and another port is tried.
        var attempt = 0
        while true {
            let port = try Self.freePort()
            do {
                (ledger, ledgerClient) = try await Self.startLedger(
                    directory: directory, port: port, environment: ledgerEnvironment)
                ledgerPort = port
                break
            } catch let error as ServiceProcessError
                where attempt < 4 && error.description.contains("Address already in use")
            {
                attempt += 1
            }
        }
    }

    static func startLedger(directory: URL, port: Int, environment: [String: String] = [:]) async throws
        -> (ServiceProcess, RPCClient)
    {
        let process = try ServiceProcess(
            "ledger", environment: environment.merging(["RPC_LISTEN": "127.0.0.1:\(port)"]) { _, new in new },
            directory: directory)
        _ = try await process.rpcPort()
        return (process, try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: port)]))
    }

    /// SIGKILLs the ledger and starts it again on the same file and port.
    func crashLedger() async throws {
        await killLedger()
        try await restartLedger()
    }

    /// SIGKILLs the ledger and waits until it is gone.
    func killLedger() async {
        ledger.kill()
        _ = await ledger.waitForExit()
        ledgerClient.shutdown()
    }

    /// Starts the ledger again on the same file and port.
    func restartLedger() async throws {
        (ledger, ledgerClient) = try await Self.startLedger(
            directory: directory, port: ledgerPort, environment: ledgerEnvironment)
    }

    /// An entitlement service following this ledger; returns it with its RPC client and HTTP port.
    func startEntitlement(environment extra: [String: String] = [:]) async throws -> (
        process: ServiceProcess, client: RPCClient, http: Int
    ) {
        let process = try ServiceProcess(
            "entitlement",
            environment: ["LEDGER_ADDR": "127.0.0.1:\(ledgerPort)", "ENTITLEMENT_POLICY_FILE": policyPath].merging(
                extra
            ) { _, new in new })
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await process.rpcPort())])
        return (process, client, try await process.httpPort())
    }

    /// Runs `body` with a new stack and stops it afterwards, whatever happened.
    static func with(_ body: (EntitlementStack) async throws -> Void) async throws {
        let stack = try await EntitlementStack()
        do { try await body(stack) } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    func stop() async {
        ledgerClient.shutdown()
        if let ledgerHost {
            await ledgerHost.stop()
        } else {
            ledger.terminate()
            _ = await ledger.waitForExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// An entitlement service in this test's process on the in-process ledger, reaching it
    /// through the in-process transport.
    func startEntitlementInProcess(environment extra: [String: String] = [:]) async throws -> (
        service: InProcessService, client: RPCClient, http: Int
    ) {
        let ledger = try #require(ledgerHost, "the stack's ledger is a process").transport()
        let service = try await InProcessService(
            { environment, signal in
                try EntitlementService.make(environment: environment, signal: signal, ledger: ledger)
            },
            environment: ["ENTITLEMENT_POLICY_FILE": policyPath].merging(extra) { _, new in new })
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: service.rpcPort())])
        return (service, client, service.httpPort())
    }

    // MARK: Ledger calls

    static let ledgerService = "subscriptions.ledger.v1.Ledger"

    /// Records an Apple purchase and links it to `account`; returns the feed position reached.
    @discardableResult
    func purchase(_ storeID: String, account: String, expires: Int64, storeTime: Int64) async throws -> UInt64 {
        let key = SubscriptionKey(store: .apple, environment: .production, storeID: storeID)
        let state = Subscription(
            key: key, productID: "com.example.pro.monthly", productKind: .autoRenewable, state: .active,
            ownership: .purchased, purchaseTimeMilliseconds: storeTime - 86_400_000, expiresTimeMilliseconds: expires,
            autoRenew: true, storeTimeMilliseconds: storeTime, bundleOrPackage: "com.example.app")
        let _: RecordVerifiedStateResponse = try await ledgerClient.call(
            "\(Self.ledgerService)/RecordVerifiedState",
            RecordVerifiedStateRequest(idempotencyKey: "r-\(storeID)-\(storeTime)", subscription: state))
        return try await link(key, account: account, tag: "l-\(storeID)-\(account)")
    }

    /// Links (or transfers) a subscription to `account`; returns the feed position reached.
    func link(_ key: SubscriptionKey, account: String, tag: String) async throws -> UInt64 {
        let response: LinkAccountResponse = try await ledgerClient.call(
            "\(Self.ledgerService)/LinkAccount",
            LinkAccountRequest(idempotencyKey: tag, key: key, accountID: account, policy: .transfer))
        return response.position
    }

    // MARK: Entitlement calls

    /// Waits (polling its metrics, at most 60 s) until an entitlement service's view reflects
    /// feed position `position`.
    static func waitForPosition(_ position: UInt64, http: Int) async throws {
        let reached = try await poll(every: .milliseconds(5)) {
            (await ServiceFiles.metric("entitlement_feed_position", httpPort: http) ?? -1) >= Double(position)
        }
        if !reached { Issue.record("the entitlement view never reached position \(position)") }
    }

    /// CheckAccess for every account, 100 a call, at a fixed instant.
    static func answers(_ client: RPCClient, accounts: [String], at: Int64) async throws -> [CheckAccessResponse] {
        try await answers(
            client, accounts.map { CheckAccessRequest(accountID: $0, capability: "pro", atMilliseconds: at) })
    }

    /// The answers to `checks`, in their order, asked 100 a call (`CheckAccessBatch`'s limit).
    static func answers(_ client: RPCClient, _ checks: [CheckAccessRequest]) async throws -> [CheckAccessResponse] {
        var results: [CheckAccessResponse] = []
        for start in stride(from: 0, to: checks.count, by: 100) {
            let batch = CheckAccessBatchRequest(checks: Array(checks[start..<min(start + 100, checks.count)]))
            let response: CheckAccessBatchResponse = try await client.call(
                EntitlementRPC.checkAccessBatch.name, batch)
            results += response.results
        }
        return results
    }

    /// A port for a ledger that is restarted on it: free now, and below the kernel's ephemeral
    /// range, so that neither an outgoing connection nor a listener on port 0 (every other
    /// service the tests start) is ever given it, also while the ledger is down. Random within
    /// the 12,000 ports below that range, so that stacks started at once do not pick the same.
    static func freePort() throws -> Int {
        let range =
            (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
        let candidates = max(1024, range - 12_000)..<max(1025, range)
        for _ in 0..<200 {
            let port = Int.random(in: candidates)
            if canBind(port) { return port }
        }
        throw RPCError(.unavailable, "no free port in \(candidates)")
    }

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
