import Config
import Foundation
import Model
import RPC
import ServiceProcessKit
import Sockets
import Wire

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `make demo`: the three services on SQLite and the store simulator, and a narrated year of
/// two customers: Alice on the App Store, Bob on Google Play. Each step prints what the store
/// did, what the ledger recorded, and what `CheckAccess` answers at that date.
struct Demo {
    static let policy = """
        # The demo's product policy: "pro" from either plan, "premium" from the premium plans only.
        capability pro
          apple com.example.pro.monthly
          apple com.example.premium.monthly
          google pro_sub
          google premium_sub
        capability premium
          apple com.example.premium.monthly
          google premium_sub

        """
    static let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    static let alice = "0f8fad5b-d9cb-469f-a165-70867728950e"
    static let bob = "bob"
    static let bobsNewPhone = "bob-new-phone"

    let directory: URL
    var processes: [ServiceProcess] = []
    var control = 0
    var ledger: RPCClient!
    var verifier: RPCClient!
    var entitlement: RPCClient!
    var entitlementHTTP = 0
    /// The feed position of the last event printed per account.
    var printed: [String: UInt64] = [:]

    init() {
        directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".run/demo")
    }

    /// Runs the demo; returns the exit status.
    static func main() async -> Int32 {
        var demo = Demo()
        do {
            try await demo.startEverything()
            try await demo.playTheYear()
            demo.stopEverything()
            print("\nThe year is over; everything stopped. Logs and the ledger's SQLite file are in .run/demo.")
            return 0
        } catch {
            demo.stopEverything()
            print("demo failed: \(error)")
            return 1
        }
    }

    // MARK: The year

    mutating func playTheYear() async throws {
        try await heading("Alice subscribes on her iPhone, Bob on his Android phone")
        let bought = try await store(
            "apple/buy", ["productId": "com.example.pro.monthly", "appAccountToken": Self.alice])
        let alicesPurchase = try string(bought, "originalTransactionId")
        note("store", "App Store: Alice bought com.example.pro.monthly (original transaction \(alicesPurchase))")
        let _: VerifyPurchaseResponse = try await verifier.call(
            VerifierRPC.verifyApplePurchase.name,
            VerifyApplePurchaseRequest(
                accountID: Self.alice, transactionID: alicesPurchase, environment: .sandbox, idempotencyKey: "alice-1"))
        note("app", "Alice's app sent the transaction to VerifyApplePurchase")
        let bobs = try await store("google/buy", ["productId": "pro_sub"])
        let bobsToken = try string(bobs, "purchaseToken")
        note("store", "Google Play: Bob bought pro_sub (token \(bobsToken.prefix(20))…)")
        let _: VerifyPurchaseResponse = try await verifier.call(
            VerifierRPC.verifyGooglePurchase.name,
            VerifyGooglePurchaseRequest(
                accountID: Self.bob, packageName: "com.example.app", productID: "pro_sub", purchaseToken: bobsToken,
                idempotencyKey: "bob-1"))
        note("app", "Bob's app sent the token to VerifyGooglePurchase (the verifier acknowledges it)")
        try await report([Self.alice, Self.bob])

        try await advance("+31d")
        try await heading("A month later: both subscriptions renew")
        try await report([Self.alice, Self.bob])

        try await store("apple/fail-payment", ["transactionId": alicesPurchase])
        try await advance("+28d")
        try await heading("Alice's card is declined at renewal")
        note("store", "App Store: the renewal failed; a 16-day billing grace period began")
        try await report([Self.alice])
        try await advance("+3d")
        try await heading("Alice updates her card")
        try await store("apple/recover", ["transactionId": alicesPurchase])
        note("store", "App Store: the subscription renewed, keeping the days it had paid for (no gap)")
        try await report([Self.alice])

        try await advance("+31d")
        try await heading("Bob upgrades to premium, effective at once")
        let upgraded = try await store(
            "google/change-product", ["purchaseToken": bobsToken, "productId": "premium_sub", "immediately": true])
        let bobsPremium = try string(upgraded, "purchaseToken")
        note("store", "Google Play: a new token for premium_sub replaced the old one (linkedPurchaseToken)")
        try await report([Self.bob], capabilities: ["pro", "premium"])

        try await advance("+31d")
        try await advance("+31d")
        try await heading("Two quiet months of renewals")
        try await report([Self.alice, Self.bob])

        try await advance("+31d")
        try await heading("Alice asks Apple for a refund of this month")
        let chain = try await store("apple/transactions", ["transactionId": alicesPurchase])
        guard let thisMonth = (chain["transactionIds"] as? [String])?.last else {
            throw DemoError("storesim answered no transactionIds")
        }
        try await store("apple/refund", ["transactionId": thisMonth])
        note("store", "App Store: transaction \(thisMonth) refunded; access ends now, not at the end of the period")
        try await report([Self.alice])

        try await advance("+31d")
        try await heading("Bob gets a new phone and restores his purchases there under a new account")
        let restored: RestorePurchasesResponse = try await verifier.call(
            VerifierRPC.restorePurchases.name,
            RestorePurchasesRequest(
                accountID: Self.bobsNewPhone,
                googlePurchases: [
                    .init(packageName: "com.example.app", productID: "premium_sub", purchaseToken: bobsPremium)
                ],
                idempotencyKey: "bob-restore"))
        note(
            "app",
            "RestorePurchases on the new phone: \(restored.subscriptions.count) subscription(s) moved (transfer policy)"
        )
        try await report([Self.bob, Self.bobsNewPhone], capabilities: ["premium"])

        for _ in 0..<5 { try await advance("+29d") }
        try await advance("+2d")
        try await heading("The rest of the year")
        try await report([Self.alice, Self.bob, Self.bobsNewPhone], capabilities: ["pro", "premium"])

        try await heading(
            "Alice's year as support sees it: GetAccessTimeline, or subctl access timeline \(Self.alice)")
        let start = try await simNow() - 366 * 86_400_000
        let timeline: GetAccessTimelineResponse = try await entitlement.call(
            EntitlementRPC.getAccessTimeline.name,
            GetAccessTimelineRequest(
                accountID: Self.alice, capability: "pro", fromMilliseconds: start,
                toMilliseconds: try await simNow()))
        for interval in timeline.capabilities.first?.intervals ?? [] {
            let kind = interval.kind.map { "\($0)" } ?? "-"
            note(
                "access",
                "\(Self.date(interval.startMilliseconds)) to \(Self.date(interval.endMilliseconds)): "
                    + "\(kind.padding(toLength: 8, withPad: " ", startingAt: 0)) "
                    + (interval.allowed ? "allowed" : "denied (\(interval.reason.map { "\($0)" } ?? "-"))"))
        }
    }

    // MARK: Steps

    /// A control call to the simulator; the notifications it made are delivered before it
    /// answers, then the services settle.
    @discardableResult
    mutating func store(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        let answer = try await post("/control/\(path)", body)
        try await settle()
        return answer
    }

    mutating func advance(_ offset: String) async throws {
        try await store("clock/advance", ["by": offset])
    }

    /// Waits until the verifier has processed every notification it took and acknowledged every
    /// Google Play purchase an account holds, and the entitlement service has every change the ledger
    /// committed. (The acknowledgement follows the record: without waiting for it, the next
    /// clock move could pass Play's three days, and the simulator, as Play, refunds the purchase.)
    func settle() async throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let pending: ListInboxResponse = try await ledger.call(
                LedgerRPC.listInbox.name, ListInboxRequest(status: .pending, pageSize: 10))
            let unacknowledged: ListSubscriptionsResponse = try await ledger.call(
                LedgerRPC.listSubscriptions.name,
                ListSubscriptionsRequest(store: .google, pageSize: 100, unacknowledged: true))
            let position: GetFeedPositionResponse = try await ledger.call(
                LedgerRPC.getFeedPosition.name, GetFeedPositionRequest())
            // One no account holds yet (bought, not yet verified) is acknowledged once linked.
            let owed = unacknowledged.subscriptions.filter { !($0.accountID ?? "").isEmpty }
            if pending.entries.isEmpty, owed.isEmpty,
                await entitlementPosition() >= position.position
            {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DemoError("the services did not settle within 30 s")
    }

    func entitlementPosition() async -> UInt64 {
        UInt64(await ServiceFiles.metric("entitlement_feed_position", httpPort: entitlementHTTP) ?? 0)
    }

    /// Prints, per account, the ledger events since the last report and what CheckAccess says.
    mutating func report(_ accounts: [String], capabilities: [String] = ["pro"]) async throws {
        let now = try await simNow()
        for account in accounts {
            for event in try await trail(of: account) where (event.position ?? 0) > (printed[account] ?? 0) {
                let what = [event.storeType, event.storeSubtype].compactMap { $0 }.joined(separator: "/")
                note(
                    "ledger",
                    "\(name(account)): \(event.kind.map { "\($0)" } ?? "event")\(what.isEmpty ? "" : " (\(what))")")
                printed[account] = event.position ?? 0
            }
            for capability in capabilities {
                let answer: CheckAccessResponse = try await entitlement.call(
                    EntitlementRPC.checkAccess.name,
                    CheckAccessRequest(accountID: account, capability: capability, atMilliseconds: now))
                let why = [answer.grant?.productID, answer.grant?.state.map { "\($0)" }].compactMap { $0 }
                    .joined(separator: ", ")
                let verdict =
                    answer.allowed
                    ? "allowed until \(answer.untilMilliseconds.map(Self.date) ?? "no end")"
                    : "denied (\(answer.reason.map { "\($0)" } ?? "no reason"))"
                note("access", "\(name(account)) \(capability): \(verdict)\(why.isEmpty ? "" : " — \(why)")")
            }
        }
    }

    /// The audit trail of an account: its own events (links, transfers) and every event of the
    /// subscriptions it holds now, oldest first.
    func trail(of account: String) async throws -> [LifecycleEvent] {
        var events: [UInt64: LifecycleEvent] = [:]
        let own: GetHistoryResponse = try await ledger.call(
            LedgerRPC.getHistory.name, GetHistoryRequest(accountID: account, pageSize: 500))
        for event in own.events { events[event.position ?? 0] = event }
        // An account the ledger does not know (yet) holds nothing.
        let found: GetAccountResponse? = try? await ledger.call(
            LedgerRPC.getAccount.name, GetAccountRequest(accountID: account))
        let held = found?.subscriptions ?? []
        for subscription in held {
            let history: GetHistoryResponse = try await ledger.call(
                LedgerRPC.getHistory.name, GetHistoryRequest(key: subscription.key, pageSize: 500))
            for event in history.events { events[event.position ?? 0] = event }
        }
        return events.values.sorted { ($0.position ?? 0) < ($1.position ?? 0) }
    }

    func name(_ account: String) -> String {
        switch account {
        case Self.alice: "Alice"
        case Self.bob: "Bob"
        default: "Bob's new phone"
        }
    }

    /// A step's title under the store's date.
    func heading(_ text: String) async throws {
        print("\n\(Self.date(try await simNow()).prefix(10))  \(text)")
    }
    func note(_ who: String, _ text: String) {
        print("  \(who.padding(toLength: 7, withPad: " ", startingAt: 0)) \(text)")
    }

    static func date(_ milliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000)) + " UTC"
    }

    // MARK: Plumbing

    mutating func startEverything() async throws {
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let policy = directory.appendingPathComponent("policy.conf")
        try Data(Self.policy.utf8).write(to: policy)
        print("Starting the store simulator, the ledger (SQLite), the entitlement service and the verifier…")
        let simulator = try launch(
            "storesim",
            ["STORESIM_DIR": directory.appendingPathComponent("storesim").path, "STORESIM_START": String(Self.start)])
        let ready = try await simulator.line(containing: "\"msg\":\"storesim ready\"", within: 30)
        guard let port = ServiceProcess.field("control_port", in: ready).flatMap({ Int($0) }) else {
            throw DemoError("storesim logged no control port")
        }
        control = port
        let ledgerProcess = try launch("ledger", [:])
        let ledgerPort = try await ledgerProcess.rpcPort()
        ledger = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: ledgerPort)])
        let entitlementProcess = try launch(
            "entitlement", ["LEDGER_ADDR": "127.0.0.1:\(ledgerPort)", "ENTITLEMENT_POLICY_FILE": policy.path])
        entitlement = try RPCClient(
            endpoints: [HostPort(host: "127.0.0.1", port: try await entitlementProcess.rpcPort())])
        entitlementHTTP = try await entitlementProcess.httpPort()
        _ = try await entitlementProcess.line(containing: "\"msg\":\"snapshot loaded\"", within: 30)
        var settings = try ServiceFiles.environment(at: directory.appendingPathComponent("storesim/verifier.env"))
        settings["LEDGER_ADDR"] = "127.0.0.1:\(ledgerPort)"
        let verifierProcess = try launch("verifier", settings)
        verifier = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await verifierProcess.rpcPort())])
        let verifierHTTP = try await verifierProcess.httpPort()
        _ = try await verifierProcess.line(containing: "\"msg\":\"dependency available\"", within: 30)
        _ = try await post(
            "/control/apple/notification-url", ["url": "http://127.0.0.1:\(verifierHTTP)/apple/notifications/sandbox"])
        _ = try await post("/control/google/notification-url", ["url": "http://127.0.0.1:\(verifierHTTP)/google/rtdn"])
        print("Ready. The store's clock starts on 2026-01-01; each step moves it forward.")
    }

    mutating func launch(_ name: String, _ environment: [String: String]) throws -> ServiceProcess {
        let process = try ServiceProcess(
            name, environment: environment, directory: directory,
            logFile: directory.appendingPathComponent("\(name).log"))
        processes.append(process)
        return process
    }

    func stopEverything() {
        ledger?.shutdown()
        verifier?.shutdown()
        entitlement?.shutdown()
        for process in processes.reversed() { process.stop() }
    }

    func post(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(control)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200, let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw DemoError("storesim \(path) answered \(status): \(String(decoding: data, as: UTF8.self))")
        }
        return object
    }

    func simNow() async throws -> Int64 {
        let (data, _) = try await URLSession.shared.data(
            from: URL(string: "http://127.0.0.1:\(control)/control/clock")!)
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let now = (object["now"] as? NSNumber)?.int64Value
        else { throw DemoError("storesim answered no clock") }
        return now
    }

    func string(_ object: [String: Any], _ key: String) throws -> String {
        guard let value = object[key] as? String else { throw DemoError("storesim answered no \(key)") }
        return value
    }
}
