import Foundation
import Lifecycle
import Model
import Sockets
import SubctlKit
import Synchronization
import Testing
import Wire

@Suite("subctl import: parsing the command and the file, the progress file and the report")
struct ImportCommandTests {
    static let addr = ["--addr", "127.0.0.1:7001"]

    @Test("the command line: defaults, every option, and what is refused")
    func commandLine() throws {
        let options = CallOptions(address: HostPort(host: "127.0.0.1", port: 7001), timeout: .seconds(5))
        #expect(
            try SubctlCommand.parse(["import", "subs.csv"] + Self.addr)
                == .importFile(ImportOptions(path: "subs.csv", call: options)))
        #expect(
            try SubctlCommand.parse(
                [
                    "import", "subs.csv", "--rate", "2.5", "--concurrency", "64", "--progress", "p", "--report-json",
                    "r.json", "--account-from", "last-seen", "--reason", "migration",
                ] + Self.addr)
                == .importFile(
                    ImportOptions(
                        path: "subs.csv", rate: 2.5, concurrency: 64, progressPath: "p", reportJSONPath: "r.json",
                        accountSource: .lastSeen, reason: "migration", call: options)))
        let dry = try SubctlCommand.parse(["import", "subs.csv", "--dry-run"])
        #expect(dry == .importFile(ImportOptions(path: "subs.csv", dryRun: true, call: nil)))
        #expect(dry.callOptions == nil)
        #expect(ImportOptions(path: "/data/subs.csv", call: nil).progressPath == "/data/subs.csv.progress")
        for bad in [
            ["import"], ["import", "f"], ["import", "f", "--rate", "0"] + Self.addr,
            ["import", "f", "--rate", "fast"] + Self.addr, ["import", "f", "--account-from", "newest"] + Self.addr,
            ["import", "f", "--reason", ""] + Self.addr, ["import", "f", "--concurrency", "0"] + Self.addr,
            ["import", "f", "--concurrency", "65"] + Self.addr, ["import", "f", "--concurrency", "2.5"] + Self.addr,
        ] {
            #expect(throws: SubctlError.self) { try SubctlCommand.parse(bad) }
        }
    }

    static let revenueCat = """
        rc_original_app_user_id,rc_last_seen_app_user_id_alias,country,store,is_sandbox,product_identifier,\
        store_transaction_id,original_store_transaction_id,reserved_subscriber_attributes
        user-1,alias-1,GB,app_store,false,pro.monthly,2000000002,2000000001,"{""$email"": ""a@b.c""}"
        user-1,alias-1,GB,app_store,false,pro.monthly,2000000003,2000000001,{}
        user-2,alias-2,US,app_store,true,pro.monthly,3000000001,,{}
        user-3,alias-3,US,play_store,false,pro.monthly,GPA.1234-5678-9012-34567,GPA.1234-5678-9012-34567,{}
        user-4,alias-4,US,stripe,false,pro.monthly,sub_1,sub_1,{}
        user-5,alias-5,US,app_store,maybe,pro.monthly,4000000001,4000000001,{}

        """

    @Test("a RevenueCat export: a subscription per original transaction, Play rows need a token, others skipped")
    func revenueCatExport() throws {
        let file = try ImportFile.read(Self.revenueCat)
        #expect(file.format == .revenueCat)
        #expect(file.rowCount == 6)
        #expect(
            file.items == [
                .init(
                    id: "apple/production/2000000001", accountID: "user-1",
                    purchase: .apple(transactionID: "2000000001", sandbox: false), rows: [1, 2]),
                .init(
                    id: "apple/sandbox/3000000001", accountID: "user-2",
                    purchase: .apple(transactionID: "3000000001", sandbox: true), rows: [3]),
            ])
        #expect(
            file.unimported == [
                .init(row: 4, reason: .needsToken), .init(row: 5, reason: .skipped(store: "stripe")),
                .init(row: 6, reason: .invalid("is_sandbox is neither true nor false")),
            ])
        let lastSeen = try ImportFile.read(Self.revenueCat, accountSource: .lastSeen)
        #expect(lastSeen.items.map(\.accountID) == ["alias-1", "alias-2"])
    }

    @Test("the own CSV and JSON lines: Apple by any transaction id, Google by token, package and product")
    func ownFormats() throws {
        let csv = """
            account_id,store,environment,transaction_id,purchase_token,package_name,product_id
            acct-1,apple,sandbox,1000000009,,,
            acct-2,google,production,,tok-2,com.example.app,pro.monthly
            acct-3,google,production,,,com.example.app,pro.monthly
            acct-4,amazon,production,a-1,,,
            acct-5,google,production,,tok-2,com.example.app,pro.monthly
            """
        let file = try ImportFile.read(csv)
        #expect(file.format == .csv)
        #expect(file.items.map(\.id) == ["apple/sandbox/1000000009", "google/com.example.app/tok-2"])
        #expect(
            file.unimported == [
                .init(row: 3, reason: .needsToken), .init(row: 4, reason: .skipped(store: "amazon")),
                .init(
                    row: 5,
                    reason: .invalid("names google/com.example.app/tok-2 for account acct-5, an earlier row for acct-2")
                ),
            ])
        let lines = """
            {"account_id": "acct-1", "store": "apple", "environment": "production", "transaction_id": "1000000001"}
            {"account_id": "acct-2", "store": "google", "purchase_token": "tok-2", "package_name": "p", "product_id": "x"}
            not json
            """
        let parsed = try ImportFile.read(lines)
        #expect(parsed.format == .jsonLines)
        #expect(
            parsed.items.map(\.purchase) == [
                .apple(transactionID: "1000000001", sandbox: false),
                .google(packageName: "p", productID: "x", purchaseToken: "tok-2"),
            ])
        #expect(parsed.unimported == [.init(row: 3, reason: .invalid("not a JSON object"))])
        #expect(throws: SubctlError.self) { try ImportFile.read("name,email\na,b\n") }
    }

    @Test("the progress file keeps each outcome across opens and drops a torn last line")
    func progressFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("subs.csv.progress").path
        do {
            let progress = try ImportProgress(path: path)
            try progress.record(ImportOutcome(id: "apple/production/1", kind: .imported))
            try progress.record(
                ImportOutcome(id: "google/p/t", kind: .otherAccount, policy: "kept", otherAccountID: "acct-9"))
        }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"id":"apple/production/2","ki"#.utf8))
        handle.closeFile()
        let reopened = try ImportProgress(path: path)
        #expect(
            reopened.outcomes == [
                "apple/production/1": ImportOutcome(id: "apple/production/1", kind: .imported),
                "google/p/t": ImportOutcome(
                    id: "google/p/t", kind: .otherAccount, policy: "kept", otherAccountID: "acct-9"),
            ])
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 2)
    }

    @Test("the report counts every row and subscription once, as text and JSON")
    func report() throws {
        let file = try ImportFile.read(Self.revenueCat)
        let outcomes = [
            "apple/production/2000000001": ImportOutcome(
                id: "apple/production/2000000001", kind: .imported, environment: "sandbox"),
            "apple/sandbox/3000000001": ImportOutcome(
                id: "apple/sandbox/3000000001", kind: .refused, reason: "NOT_FOUND: no such transaction"),
        ]
        let report = ImportReport(file: file, outcomes: outcomes, earlier: 1, dryRun: false)
        #expect(report.imported + report.refused.values.reduce(0, +) == report.subscriptions)
        #expect(
            report.text == [
                "import: 6 rows, 2 subscriptions (1 finished by an earlier run)",
                "  imported           1",
                "  already present    0",
                "  other account      0",
                "  refused            1",
                "    1  NOT_FOUND: no such transaction",
                "  other environment  1 (the App Store has them in the other environment than the file says; "
                    + "recorded as the App Store has them)",
                "  needs a token      1 rows (Play Store rows without purchase_token)",
                "  skipped            1 rows",
                "    1  stripe",
                "  unreadable         1 rows",
                "    1  is_sandbox is neither true nor false",
            ])
        #expect(
            report.json
                == #"{"already_present":0,"dry_run":false,"environment_differs":1,"from_earlier_runs":1,"imported":1,"invalid":{"is_sandbox is neither true nor false":1},"needs_token":1,"not_done":0,"other_account":{},"refused":{"NOT_FOUND: no such transaction":1},"rows":6,"skipped":{"stripe":1},"subscriptions":2}"#
        )
    }

    @Test("an App Store purchase the store has in the other environment than the file's is marked so")
    func otherEnvironment() throws {
        let file = try ImportFile.read(
            #"{"account_id": "a", "store": "apple", "environment": "production", "transaction_id": "2000000001"}"#)
        let item = try #require(file.items.first)
        func answer(_ environment: StoreEnvironment) -> RestorePurchasesResponse {
            RestorePurchasesResponse(restored: [
                RestoredPurchase(
                    key: SubscriptionKey(store: .apple, environment: environment, storeID: "2000000001"), link: .linked)
            ])
        }
        #expect(
            ImportRun.outcome(item, answer(.sandbox))
                == ImportOutcome(id: "apple/production/2000000001", kind: .imported, environment: "sandbox"))
        #expect(
            ImportRun.outcome(item, answer(.production))
                == ImportOutcome(id: "apple/production/2000000001", kind: .imported))
    }

    /// The RevenueCat export written to a new directory (removed by `body`'s end), and import
    /// options for it at `concurrency`.
    static func withExport(
        concurrency: Int = ImportOptions.defaultConcurrency, _ body: (ImportOptions) async throws -> Void
    )
        async throws
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("subs.csv").path
        try Self.revenueCat.write(toFile: input, atomically: true, encoding: .utf8)
        try await body(
            ImportOptions(
                path: input, rate: 1000, concurrency: concurrency, reason: "migration",
                call: CallOptions(address: HostPort(host: "127.0.0.1", port: 7001), timeout: .seconds(5))))
    }

    @Test("a run restores each subscription once with a key derived from the file, and a second run none")
    func run() async throws {
        try await Self.withExport { options in try await Self.runTwice(options) }
    }

    static func runTwice(_ options: ImportOptions) async throws {
        let transport = RestoreTransport()
        let first = try await ImportRun(options: options, transport: transport, sleep: { _ in }).run()
        #expect(first.imported == 1)
        #expect(first.otherAccount == ["kept": 1])
        // The calls run concurrently: the order they reach the verifier in is not fixed.
        let requests = transport.requests.withLock { $0 }.sorted { $0.reason ?? "" < $1.reason ?? "" }
        #expect(requests.map(\.appleTransactionIDs) == [["2000000001"], ["3000000001"]])
        #expect(requests.map(\.reason) == ["migration (subs.csv row 1)", "migration (subs.csv row 3)"])
        #expect(Set(requests.map(\.idempotencyKey)).count == 2)
        let second = try await ImportRun(options: options, transport: transport, sleep: { _ in }).run()
        #expect(transport.requests.withLock { $0.count } == 2)
        #expect(second.fromEarlierRuns == 2)
        #expect(second.imported == 1)
    }

    @Test("an interruption stops the run: what finished is recorded and reported, the call cut short is not")
    func interrupted() async throws {
        try await Self.withExport(concurrency: 1) { options in try await Self.interrupt(options) }
    }

    static func interrupt(_ options: ImportOptions) async throws {
        let interrupt = ShutdownSignal()
        let transport = HoldingSecondTransport(interrupt)
        let partial = Mutex<ImportReport?>(nil)
        await #expect(
            throws: SubctlError(
                .incomplete, "stopped by SIGINT: what finished is recorded; run the same command again to go on")
        ) {
            _ = try await ImportRun(options: options, transport: transport, sleep: { _ in }, interrupt: interrupt)
                .run { report in partial.withLock { $0 = report } }
        }
        #expect(partial.withLock { $0 }?.imported == 1)
        #expect(partial.withLock { $0 }?.notDone == 1)
        // The call cut short has no outcome: the next run asks for it again, and only for it.
        let second = try await ImportRun(options: options, transport: RestoreTransport(), sleep: { _ in }).run()
        #expect(second.fromEarlierRuns == 1 && second.notDone == 0)
    }

    @Test("a rate limit is waited out as the verifier names it, then retried with the same key")
    func rateLimit() async throws {
        #expect(ImportRun.wait("RATE_LIMIT_EXCEEDED; try again after 7 s (Retry-After)", attempt: 1) == .seconds(7))
        #expect(ImportRun.wait("unavailable", attempt: 1) == .seconds(1))
        #expect(ImportRun.wait("unavailable", attempt: 4) == .seconds(8))
        #expect(ImportRun.wait("unavailable", attempt: 12) == .seconds(60))
    }
}

/// A test verifier that answers RestorePurchases only.
protocol RestoreAnswering: BytesTransport {
    /// The answer to `request`.
    func restore(_ request: RestorePurchasesRequest) async throws(SubctlError) -> RestorePurchasesResponse
}

extension RestoreAnswering {
    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        let decoded: RestorePurchasesRequest
        do {
            decoded = try RestorePurchasesRequest(serialized: request)
        } catch {
            throw SubctlError(.dataLoss, "\(error)")
        }
        return try await restore(decoded).serialized()
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        ([], SubctlError(.rpc(.unimplemented), method))
    }
}

/// Answers RestorePurchases: the first Apple id is linked, the second kept by another account.
final class RestoreTransport: RestoreAnswering {
    let requests = Mutex<[RestorePurchasesRequest]>([])

    func restore(_ request: RestorePurchasesRequest) async throws(SubctlError) -> RestorePurchasesResponse {
        let index = requests.withLock {
            $0.append(request)
            return $0.count
        }
        let id = request.appleTransactionIDs.first ?? ""
        let key = SubscriptionKey(store: .apple, environment: .production, storeID: id)
        return RestorePurchasesResponse(
            restored: [RestoredPurchase(key: key, link: index == 1 ? .linked : .kept, otherAccountID: "acct-9")])
    }
}

/// Answers the first RestorePurchases (linked); holds the second until its call is cancelled,
/// after resolving `interrupt` as an operator's Ctrl-C would.
final class HoldingSecondTransport: RestoreAnswering {
    let count = Mutex(0)
    let interrupt: ShutdownSignal

    init(_ interrupt: ShutdownSignal) { self.interrupt = interrupt }

    func restore(_ request: RestorePurchasesRequest) async throws(SubctlError) -> RestorePurchasesResponse {
        let index = count.withLock {
            $0 += 1
            return $0
        }
        let id = request.appleTransactionIDs.first ?? ""
        guard index > 1 else {
            return RestorePurchasesResponse(restored: [
                RestoredPurchase(
                    key: SubscriptionKey(store: .apple, environment: .production, storeID: id), link: .linked)
            ])
        }
        interrupt.trigger("SIGINT")
        // Held until the run's stop cancels the call.
        let held = Mutex<CheckedContinuation<Void, Never>?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                held.withLock { $0 = continuation }
                if Task.isCancelled { held.withLock { $0.take() }?.resume() }
            }
        } onCancel: {
            held.withLock { $0.take() }?.resume()
        }
        throw SubctlError(.rpc(.cancelled), "the call was cancelled")
    }
}
