import Foundation
import Model
import RPC
import ServiceProcessKit
import ServiceRuntime
import TestSupport
import Testing
import Wire

/// `subctl import` end to end: subscriptions bought in the simulator before the backend knew of
/// them, an import file naming them, `subctl` run as a process against the verifier, killed with
/// SIGKILL in the middle and run again.
///
/// `IMPORT_ROWS` sets the number of subscriptions (default 10,000: half App Store in a RevenueCat
/// export, half Google Play in the own CSV; about 80 s alone on 2 cores) and
/// `IMPORT_CONCURRENCY` the calls in flight (default 8, as `subctl import`); `make bench-import`
/// prints the rate at 1 and at 8.
@Suite("End to end: importing subscribers", .timeLimit(.minutes(10)))
struct ImportScenarioTests {
    static var rows: Int { Int(ProcessInfo.processInfo.environment["IMPORT_ROWS"] ?? "") ?? 10000 }
    static var concurrency: Int { Int(ProcessInfo.processInfo.environment["IMPORT_CONCURRENCY"] ?? "") ?? 8 }

    @Test(
        "an import killed in the middle and run again accounts for every row once and asks each store once a subscription"
    )
    func killedAndResumed() async throws {
        try await StoreSimStack.with(inProcess: true) { stack in
            let half = Self.rows / 2
            let bought = try await stack.control(
                "apple/buy-batch", ["productId": "com.example.pro.monthly", "count": half])
            let originals = try #require(bought["originalTransactionIds"] as? [String])
            let tokens = try #require(
                try await stack.control("google/buy-batch", ["productId": "pro_sub", "count": half])["purchaseTokens"]
                    as? [String])
            #expect(originals.count == half && tokens.count == half)
            let directory = stack.entitlementStack.directory.appendingPathComponent("import")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

            // The App Store half as a RevenueCat Transactions export, with a Play Store row (no
            // purchase token) and a Stripe row.
            var export = [
                "rc_original_app_user_id,rc_last_seen_app_user_id_alias,store,is_sandbox,product_identifier,"
                    + "store_transaction_id,original_store_transaction_id"
            ]
            for (index, original) in originals.enumerated() {
                export.append(
                    "apple-\(index),alias-\(index),app_store,true,com.example.pro.monthly,\(original),\(original)")
            }
            // An id the App Store does not know: refused, NOT_FOUND.
            export.append("rc-lost,rc-lost,app_store,true,com.example.pro.monthly,9999999999,9999999999")
            export.append("rc-play,rc-play,play_store,false,pro_sub,GPA.1,GPA.1")
            export.append("rc-web,rc-web,stripe,false,pro_web,sub_1,sub_1")
            let exportFile = directory.appendingPathComponent("transactions.csv")
            try export.joined(separator: "\n").write(to: exportFile, atomically: true, encoding: .utf8)
            // The Play half in the own CSV.
            var own = ["account_id,store,environment,transaction_id,purchase_token,package_name,product_id"]
            for (index, token) in tokens.enumerated() {
                own.append("google-\(index),google,sandbox,,\(token),com.example.app,pro_sub")
            }
            let ownFile = directory.appendingPathComponent("play.csv")
            try own.joined(separator: "\n").write(to: ownFile, atomically: true, encoding: .utf8)

            let verifier = "127.0.0.1:\(try await stack.verifier.rpcPort())"
            let inProcess = try #require(stack.verifier as? InProcessService, "the verifier runs in this process")
            let inFlight = { inProcess.host.rpcCallsInFlight }
            let started = ContinuousClock.now
            let apple = try await Self.importKilledThenResumed(
                exportFile, verifier: verifier, subscriptions: half + 1, verifierCallsInFlight: inFlight)
            let google = try await Self.importKilledThenResumed(
                ownFile, verifier: verifier, subscriptions: half, verifierCallsInFlight: inFlight)
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(
                "imported \(2 * half) subscriptions in \(elapsed) (both runs of both files, "
                    + "--concurrency \(Self.concurrency)): \(String(format: "%.0f", Double(2 * half) / seconds))/s")

            for (report, refused, extra) in [(apple, 1, 2), (google, 0, 0)] {
                #expect(report["subscriptions"] as? Int == half + refused)
                #expect(report["rows"] as? Int == half + refused + extra)
                #expect(report["not_done"] as? Int == 0)
                let imported = report["imported"] as? Int ?? 0
                let present = report["already_present"] as? Int ?? 0
                #expect(imported + present == half, "\(report)")
                #expect(
                    present <= Self.concurrency,
                    "only the subscriptions in flight at the kill may be found recorded: \(report)")
                let reasons = report["refused"] as? [String: Int] ?? [:]
                #expect(reasons.values.reduce(0, +) == refused, "\(reasons)")
                #expect(
                    reasons.keys.allSatisfy { $0.hasPrefix("NOT_FOUND: ") && $0.contains("9999999999") }, "\(reasons)")
            }
            #expect(apple["needs_token"] as? Int == 1)
            #expect((apple["skipped"] as? [String: Int]) == ["stripe": 1])

            // Each store was asked about each subscription as often as about any other: none twice.
            for (store, ids) in [("apple", originals), ("google", tokens)] {
                let calls = try await Self.callsBySubscription(stack, store)
                let counts = ids.map { calls[$0] ?? 0 }
                let spread = Dictionary(grouping: counts.indices) { counts[$0] }.mapValues { indices in
                    "\(indices.count) (first at \(indices.first ?? 0))"
                }
                #expect(counts.min() == counts.max() && (counts.min() ?? 0) > 0, "\(store): \(spread)")
            }

            // Each account's access is what the store says: every purchase is active.
            let accounts = (0..<half).map { "apple-\($0)" } + (0..<half).map { "google-\($0)" }
            let now = try await stack.simNow()
            // Asked of a view that has every write of the import (min_position waits for it).
            _ = try await stack.checkAfterLedger(accounts[0], at: now)
            let answers = try await EntitlementStack.answers(stack.entitlementClient, accounts: accounts, at: now)
            let denied = zip(accounts, answers).filter { !$0.1.allowed }.map(\.0)
            #expect(denied.isEmpty, "denied: \(denied.prefix(5))")

            // The audit trail names the caller and the import file's row.
            let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: originals[0])
            let history = try await stack.entitlementStack.ledgerClient.call(
                LedgerRPC.getHistory, GetHistoryRequest(key: key, pageSize: 100))
            let event = try #require(history.events.first { $0.kind == .imported })
            #expect(event.reason == "import (transactions.csv row 1)")
            #expect(event.actor?.isEmpty == false)
        }
    }

    @Test("an import waits out the stores' rate limits and outages and imports everything, refusing nothing")
    func rateLimitedAndUnavailable() async throws {
        try await StoreSimStack.with(inProcess: true) { stack in
            let originals = try #require(
                try await stack.control("apple/buy-batch", ["productId": "com.example.pro.monthly", "count": 10])[
                    "originalTransactionIds"] as? [String])
            let tokens = try #require(
                try await stack.control("google/buy-batch", ["productId": "pro_sub", "count": 10])["purchaseTokens"]
                    as? [String])
            var lines = originals.enumerated().map {
                #"{"account_id": "apple-\#($0.offset)", "store": "apple", "environment": "sandbox", "transaction_id": "\#($0.element)"}"#
            }
            lines += tokens.enumerated().map {
                #"{"account_id": "google-\#($0.offset)", "store": "google", "purchase_token": "\#($0.element)", "package_name": "com.example.app", "product_id": "pro_sub"}"#
            }
            let directory = stack.entitlementStack.directory.appendingPathComponent("import")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("subscribers.jsonl")
            try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
            // The App Store's rate limit (429, Retry-After: 1) and Play out of reach (503), for a while.
            _ = try await stack.control("apple/api-faults", ["count": 12, "status": 429])
            _ = try await stack.control("google/api-faults", ["count": 12, "status": 503])
            let subctl = ServiceProcess.binDirectory.appendingPathComponent("subctl")
            let result = try await runCommand(
                subctl,
                [
                    // Eight calls at a time: faults fall on any of a restore's requests, and a
                    // restore that fails is asked again from its start.
                    "import", file.path, "--addr", "127.0.0.1:\(try await stack.verifier.rpcPort())", "--rate", "100",
                    "--concurrency", "8", "--report-json", file.path + ".report.json",
                ])
            #expect(result.status == 0, "\(result.output)\(result.errors)")
            let report = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: file.path + ".report.json")))
                    as? [String: Any])
            #expect(report["imported"] as? Int == 20, "\(report)")
            #expect((report["refused"] as? [String: Int]) == [:], "\(report)")
            for store in ["apple", "google"] {
                #expect(try await stack.control("\(store)/api-faults")["remaining"] as? Int == 0, "\(store)")
            }
            #expect(result.output.hasPrefix("import: 20 rows, 20 subscriptions\n  imported           20\n"))
        }
    }

    /// Runs `subctl import FILE` until about a third of `subscriptions` are done, kills it with
    /// SIGKILL, runs it again to the end, and answers the second run's JSON report. Every
    /// subscription is in the progress file exactly once.
    static func importKilledThenResumed(
        _ file: URL, verifier: String, subscriptions: Int, verifierCallsInFlight: @escaping () -> Int
    ) async throws
        -> [String: Any]
    {
        let subctl = ServiceProcess.binDirectory.appendingPathComponent("subctl")
        let progress = URL(fileURLWithPath: file.path + ".progress")
        let reportFile = URL(fileURLWithPath: file.path + ".report.json")
        let arguments = [
            "import", file.path, "--addr", verifier, "--rate", "1000", "--concurrency", "\(concurrency)",
            "--report-json", reportFile.path,
        ]
        let first = try SpawnedProcess(subctl, arguments, environment: ProcessInfo.processInfo.environment)
        let third = max(1, subscriptions / 3)
        let reached = try await poll(within: .seconds(300)) { Self.lines(progress) >= third }
        #expect(reached)
        first.send(SIGKILL)
        #expect(first.wait() == SIGKILL)
        let done = Self.lines(progress)
        #expect(done < subscriptions, "the first run ended before it was killed")
        // The calls in flight at the kill finish in the verifier (an import's restore runs to
        // its end without its caller).
        #expect(try await poll(within: .seconds(60)) { verifierCallsInFlight() == 0 })
        let second = try await runCommand(subctl, arguments)
        #expect(second.status == 0, "\(second.output)\(second.errors)")
        let ids = try String(contentsOf: progress, encoding: .utf8).split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? String
        }
        #expect(ids.count == subscriptions && Set(ids).count == subscriptions)
        let data = try Data(contentsOf: reportFile)
        let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(report["from_earlier_runs"] as? Int == done, "\(report)")
        return report
    }

    static func lines(_ file: URL) -> Int {
        guard let data = FileManager.default.contents(atPath: file.path) else { return 0 }
        return data.split(separator: UInt8(ascii: "\n")).count
    }

    /// The simulator's API calls of `store`, by the transaction id or token they name (the
    /// path's last component, before any `:action`).
    static func callsBySubscription(_ stack: StoreSimStack, _ store: String) async throws -> [String: Int] {
        let (_, body) = try await httpGet(port: stack.storesimPort, path: "/control/\(store)/api-calls")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let byPath = try #require(object["byPath"] as? [String: Int])
        var calls: [String: Int] = [:]
        for (path, count) in byPath {
            let last = path.split(separator: "/").last.map(String.init) ?? path
            calls[String(last.prefix { $0 != ":" }), default: 0] += count
        }
        return calls
    }
}
