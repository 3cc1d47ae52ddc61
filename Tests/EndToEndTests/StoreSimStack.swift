import Config
import Foundation
import Model
import RPC
import Sockets
import TestSupport
import Testing
import VerifierService
import Wire

/// The whole system against the store simulator: `storesim`, `ledger`, `verifier` and
/// `entitlement` as processes on loopback ports, configured only by the files and variables
/// `storesim` writes. Access is asked for at the simulator's instant (its clock runs ahead).
/// The stack, started in the order a deployment would: stores, ledger, entitlement, verifier.
final class StoreSimStack: @unchecked Sendable {  // used from one test task at a time
    /// The simulator's time of each store's latest customer action (`control`).
    private var lastActions: [String: Int64] = [:]
    let entitlementStack: EntitlementStack
    let storesim: ServiceProcess
    /// The simulator's control surface.
    let storesimPort: Int
    let verifier: any RunningService
    let verifierClient: RPCClient
    let entitlement: any RunningService
    let entitlementHTTP: Int
    let entitlementClient: RPCClient

    /// Where the simulator's clock starts unless a test says otherwise: 2026-01-01T00:00:00Z, so
    /// scenario dates are fixed.
    static let defaultStart: Int64 = 1_767_225_600_000

    /// The stack with the simulator's clock starting at `start` (epoch ms; nil for now), extra
    /// settings for the ledger, the verifier and the simulator, and the entitlement policy.
    /// With `inProcess`, the ledger, the entitlement service and the verifier run in this test's
    /// process (the simulator, which plays the stores, stays a process), and the services reach
    /// the ledger through the in-process transport: no process to start for each stack.
    init(
        start: Int64? = StoreSimStack.defaultStart, ledger: [String: String] = [:],
        verifier verifierExtra: [String: String] = [:], simulator simulatorExtra: [String: String] = [:],
        entitlement entitlementExtra: [String: String] = [:], policy: String = EntitlementStack.policy,
        inProcess: Bool = false
    ) async throws {
        entitlementStack = try await EntitlementStack(ledgerEnvironment: ledger, policy: policy, inProcess: inProcess)
        let directory = entitlementStack.directory.appendingPathComponent("storesim")
        var simulator = ["STORESIM_DIR": directory.path]
        simulator["STORESIM_START"] = start.map(String.init)
        simulator.merge(simulatorExtra) { _, new in new }
        storesim = try ServiceProcess("storesim", environment: simulator)
        let ready = try #require(await storesim.line(containing: "\"msg\":\"storesim ready\""), "\(storesim.log)")
        storesimPort = try #require(Int(ServiceProcess.field("control_port", in: ready) ?? ""))
        var settings = try ServiceFiles.environment(at: directory.appendingPathComponent("verifier.env"))
        settings["LEDGER_ADDR"] = "127.0.0.1:\(entitlementStack.ledgerPort)"
        settings.merge(verifierExtra) { _, new in new }
        if let ledgerHost = entitlementStack.ledgerHost {
            (entitlement, entitlementClient, entitlementHTTP) = try await entitlementStack.startEntitlementInProcess(
                environment: entitlementExtra)
            let transport = try ledgerHost.transport()
            verifier = try await InProcessService(
                { environment, signal in
                    try VerifierService.make(environment: environment, signal: signal, ledger: transport)
                }, environment: settings)
        } else {
            (entitlement, entitlementClient, entitlementHTTP) = try await entitlementStack.startEntitlement(
                environment: entitlementExtra)
            verifier = try ServiceProcess("verifier", environment: settings)
        }
        verifierClient = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await verifier.rpcPort())])
        let verifierHTTP = try await verifier.httpPort()
        _ = try await control(
            "apple/notification-url", ["url": "http://127.0.0.1:\(verifierHTTP)/apple/notifications/sandbox"])
        _ = try await control("google/notification-url", ["url": "http://127.0.0.1:\(verifierHTTP)/google/rtdn"])
    }

    /// The ledger's audit trail for `account`, oldest first.
    func history(of account: String) async throws -> [LifecycleEvent] {
        var events: [LifecycleEvent] = []
        var token: String?
        repeat {
            let page: GetHistoryResponse = try await entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/GetHistory",
                GetHistoryRequest(accountID: account, pageSize: 100, pageToken: token))
            events += page.events
            token = page.nextPageToken
        } while token != nil
        return events.reversed()
    }

    /// The store's event types in the audit trail for `account` (Apple's notification types).
    func storeTypes(of account: String) async throws -> [String] {
        try await history(of: account).compactMap(\.storeType)
    }

    /// The store event types for `account`, read again (at most 60 s) until `expected` holds:
    /// a state can reach the ledger (from the store's API) before the event that announced it.
    func eventuallyInHistory(of account: String, _ what: String, _ expected: ([String]) -> Bool) async throws
        -> [String]
    {
        try await eventually(what, { try await storeTypes(of: account) }, expected)
    }

    /// The normalized event kinds for `account`, read again until `expected` holds.
    func eventuallyKinds(of account: String, _ what: String, _ expected: ([EventKind]) -> Bool) async throws
        -> [EventKind]
    {
        try await eventually(what, { try await kinds(of: account) }, expected)
    }

    private func eventually<T>(_ what: String, _ read: () async throws -> [T], _ expected: ([T]) -> Bool)
        async throws -> [T]
    {
        let deadline = ContinuousClock.now + .seconds(60)
        var values: [T] = []
        while ContinuousClock.now < deadline {
            values = try await read()
            if expected(values) { return values }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the audit trail never showed \(what): \(values)")
        return values
    }

    /// The normalized event kinds in the audit trail for `account`.
    func kinds(of account: String) async throws -> [EventKind] {
        try await history(of: account).compactMap(\.kind)
    }

    /// Runs `body` with a new stack on the default settings, `policy`, the simulator's clock
    /// starting at `start` and its extra settings `simulator`, and stops it afterwards, whatever
    /// happened.
    static func with(
        policy: String = EntitlementStack.policy, start: Int64? = StoreSimStack.defaultStart,
        simulator: [String: String] = [:], inProcess: Bool = false, _ body: (StoreSimStack) async throws -> Void
    ) async throws {
        let stack = try await StoreSimStack(start: start, simulator: simulator, policy: policy, inProcess: inProcess)
        do { try await body(stack) } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// The ledger's record of one subscription: its state and every period with its signed data.
    func stored(_ key: SubscriptionKey) async throws -> GetSubscriptionResponse {
        try await entitlementStack.ledgerClient.call(
            "\(EntitlementStack.ledgerService)/GetSubscription", GetSubscriptionRequest(key: key))
    }

    func stop() async {
        verifierClient.shutdown()
        entitlementClient.shutdown()
        for service in [verifier, entitlement, storesim] as [any RunningService] { await service.stop() }
        await entitlementStack.stop()
    }

    /// POSTs to the simulator's control surface; returns the JSON answer. Every notification
    /// the action made must have been taken by the verifier (a 2xx answer).
    /// With `apart` false, a customer action may share the millisecond of the store's previous
    /// fact (to test the ledger's rule for equal store times).
    @discardableResult
    func control(_ path: String, _ body: [String: Any] = [:], delivered: Bool = true, apart: Bool = true)
        async throws -> [String: Any]
    {
        try #require(try await post(path, body, delivered: delivered, apart: apart, refusable: false))
    }

    /// `control` for a customer action the simulator may refuse as impossible now (409, as the
    /// store would not let the customer do it: resume what is not paused, refund twice): nil
    /// then, and nothing happened.
    func attempt(_ path: String, _ body: [String: Any] = [:], apart: Bool = true) async throws -> [String: Any]? {
        try await post(path, body, delivered: true, apart: apart, refusable: true)
    }

    private func post(_ path: String, _ body: [String: Any], delivered: Bool, apart: Bool, refusable: Bool)
        async throws -> [String: Any]?
    {
        let store = Self.isCustomerAction(path) ? path.prefix { $0 != "/" } : nil
        if let store, apart {
            // Two actions of a customer in one store are a second apart when the test did not
            // move the clock between them, as in life: two facts of one subscription signed at
            // the same millisecond have no order but the ledger's deterministic tie rule,
            // which need not be the order they happened in.
            if lastActions[String(store)] == (try await simNow()) {
                try await control("clock/advance", ["by": "+1s"])
            }
        }
        let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        let (status, answer) = try await httpPost(port: storesimPort, path: "/control/\(path)", body: text)
        if refusable && status == 409 { return nil }
        try #require(status == 200, "storesim /control/\(path) answered \(status): \(answer)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])
        if delivered {
            // As Pub/Sub and Apple do, what was not taken (no answer in time on a loaded machine,
            // a 503) is delivered again, up to five times, with the same ids.
            var failed = Self.untaken(object)
            var rounds = 0
            while !failed.isEmpty, rounds < 5, let sender = path.split(separator: "/").first,
                sender == "apple" || sender == "google" || path == "clock/advance"
            {
                rounds += 1
                failed = []
                for name in path == "clock/advance" ? ["apple", "google"] : [String(sender)] {
                    let (_, again) = try await httpPost(
                        port: storesimPort, path: "/control/\(name)/redeliver", body: "{}")
                    let retried = (try? JSONSerialization.jsonObject(with: Data(again.utf8)) as? [String: Any]) ?? [:]
                    failed += Self.untaken(retried)
                }
            }
            for attempt in failed {
                Issue.record("a notification was not taken after \(rounds) redeliveries: \(attempt)")
            }
        }
        if let store {
            lastActions[String(store)] = try await simNow()
        } else if path == "clock/advance" {
            // What the stores did as the clock moved (renewals, their API reads) is signed now.
            let now = try await simNow()
            for name in ["apple", "google"] { lastActions[name] = now }
        }
        return object
    }

    /// The notifications of a control answer that were not answered 2xx.
    static func untaken(_ answer: [String: Any]) -> [[String: Any]] {
        (answer["notifications"] as? [[String: Any]] ?? []).filter {
            !(200..<300).contains($0["status"] as? Int ?? 0)
        }
    }

    /// Whether a control call is something a customer (or the store on their behalf) does,
    /// rather than a setting of the simulator or a reading of its record (transactions, orders).
    static func isCustomerAction(_ path: String) -> Bool {
        let settings = [
            "faults", "api-faults", "notification-url", "redeliver", "recorded/as-of", "recorded/push", "transactions",
            "orders",
        ]
        guard path.hasPrefix("apple/") || path.hasPrefix("google/") else { return false }
        return !settings.contains { path.hasSuffix("/" + $0) }
    }

    /// A purchase of the monthly product with `account` as its appAccountToken, then the
    /// app's call to the verifier with the transaction id; returns the original transaction
    /// id and the verifier's answer. `apart` as for `control`.
    func buyOnAppStore(account: String, familyShared: Bool = false, apart: Bool = true) async throws -> (
        String, VerifyPurchaseResponse
    ) {
        let bought = try await control(
            "apple/buy",
            ["productId": "com.example.pro.monthly", "appAccountToken": account, "familyShared": familyShared],
            apart: apart)
        let original = try #require(bought["originalTransactionId"] as? String)
        let verified: VerifyPurchaseResponse = try await verifierClient.call(
            VerifierRPC.verifyApplePurchase.name,
            VerifyApplePurchaseRequest(
                accountID: account, transactionID: original, environment: .sandbox,
                idempotencyKey: "buy-\(original)"))
        return (original, verified)
    }

    /// A family-shared App Store purchase for `account` (checked to be verified as shared and to
    /// allow access); returns its original transaction id.
    func buySharedOnAppStore(account: String) async throws -> String {
        let (original, verified) = try await buyOnAppStore(account: account, familyShared: true)
        #expect(verified.subscription?.ownership == .familyShared)
        _ = try await eventually(account, "the shared purchase") { $0.allowed }
        return original
    }

    /// The family member loses `original` (REVOKE); `marking` names the transaction the
    /// revocation date goes on while a renewal charged early waits (drawn from the seed when nil);
    /// returns once `account`'s check is denied as revoked.
    func revokeFamilySharing(_ original: String, of account: String, marking: String? = nil) async throws {
        var body: [String: Any] = ["transactionId": original]
        if let marking { body["marking"] = marking }
        try await control("apple/revoke-family-sharing", body)
        let revoked = try await eventually(account, "the REVOKE") { !$0.allowed }
        #expect(revoked.reason == .revoked)
    }

    /// A Play purchase of `product` with `account` as its obfuscated account id, then the app's
    /// call to the verifier with the token; returns the token and the verifier's answer. `apart`
    /// as for `control`.
    func buyOnPlay(account: String, product: String = "pro_sub", apart: Bool = true) async throws -> (
        String, VerifyPurchaseResponse
    ) {
        let bought = try await control(
            "google/buy", ["productId": product, "obfuscatedAccountId": account], apart: apart)
        let token = try #require(bought["purchaseToken"] as? String)
        return (token, try await verifyOnPlay(token, product: product, account: account))
    }

    /// The app's call to the verifier with the Play purchase `token` of `product` for `account`
    /// (after a purchase or a plan change); returns the verifier's answer.
    func verifyOnPlay(_ token: String, product: String, account: String) async throws -> VerifyPurchaseResponse {
        try await verifierClient.call(
            VerifierRPC.verifyGooglePurchase.name,
            VerifyGooglePurchaseRequest(
                accountID: account, packageName: "com.example.app", productID: product, purchaseToken: token,
                idempotencyKey: "buy-\(token.prefix(40))"))
    }

    /// Waits until the verifier has processed every notification it took in and the entitlement
    /// service has every change the ledger committed: after this, an answer that did not change
    /// is one that will not change.
    func settle() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let pending: ListInboxResponse = try await entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .pending, pageSize: 1))
            if pending.entries.isEmpty { break }
            // A check made after this must not pass on a system that never settled.
            guard ContinuousClock.now < deadline else {
                throw RPCError(.deadlineExceeded, "the verifier still had notifications pending after 60 s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let position: GetFeedPositionResponse = try await entitlementStack.ledgerClient.call(
            "\(EntitlementStack.ledgerService)/GetFeedPosition", GetFeedPositionRequest())
        try await EntitlementStack.waitForPosition(position.position, http: entitlementHTTP)
    }

    func simNow() async throws -> Int64 {
        let (_, body) = try await httpGet(port: storesimPort, path: "/control/clock")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        return try #require((object["now"] as? NSNumber)?.int64Value)
    }

    /// CheckAccess of `capability` for `account` at each of `instants`, in batches of 100.
    func checks(_ account: String, capability: String = "pro", at instants: [Int64]) async throws
        -> [CheckAccessResponse]
    {
        try await EntitlementStack.answers(
            entitlementClient,
            instants.map { CheckAccessRequest(accountID: account, capability: capability, atMilliseconds: $0) })
    }

    /// `check` from a view that has applied every change the ledger committed so far (its feed
    /// position now, as `min_position`): what writes already made give, without waiting by time.
    func checkAfterLedger(_ account: String, at: Int64) async throws -> CheckAccessResponse {
        let position: GetFeedPositionResponse = try await entitlementStack.ledgerClient.call(
            "\(EntitlementStack.ledgerService)/GetFeedPosition", GetFeedPositionRequest())
        return try await entitlementClient.call(
            EntitlementRPC.checkAccess.name,
            CheckAccessRequest(
                accountID: account, capability: "pro", atMilliseconds: at, minPosition: position.position))
    }

    func check(_ account: String, at: Int64) async throws -> CheckAccessResponse {
        try await entitlementClient.call(
            EntitlementRPC.checkAccess.name,
            CheckAccessRequest(accountID: account, capability: "pro", atMilliseconds: at))
    }

    /// CheckAccess at the simulator's instant, asked again (at most 60 s) until `expected`
    /// holds: the notification's processing runs after the verifier's 200.
    func eventually(
        _ account: String, _ what: String, _ expected: (CheckAccessResponse) -> Bool
    ) async throws -> CheckAccessResponse {
        let deadline = ContinuousClock.now + .seconds(60)
        var last: CheckAccessResponse?
        while ContinuousClock.now < deadline {
            let answer = try await check(account, at: try await simNow())
            if expected(answer) { return answer }
            last = answer
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("CheckAccess never showed \(what); last answer \(String(describing: last))")
        return try #require(last)
    }
}
