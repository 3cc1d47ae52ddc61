import Foundation
import TestSupport
import Testing

/// Each service's real `/metrics` page, after a purchase in each store, has a sample of every
/// family `deploy/prometheus/metrics.txt` lists for it (the families the alert rules and the
/// dashboard may name; docs/operations.md tabulates them) and passes `promtool check metrics`
/// (Debian's `prometheus` package; scripts/install-deps installs it).
@Suite("Metrics pages")
struct MetricsPageTests {
    /// The families of `deploy/prometheus/metrics.txt` (the list the alert rules and the
    /// dashboard are held to) that `service` exports, a histogram by its `_bucket` samples.
    static func families(of service: String) throws -> [String] {
        let list = ManualPage.root.appendingPathComponent("deploy/prometheus/metrics.txt")
        return try String(contentsOf: list, encoding: .utf8).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard !line.hasPrefix("#"), fields.count == 3, fields[2].split(separator: ",").contains(Substring(service))
            else { return nil }
            return fields[1] == "histogram" ? "\(fields[0])_bucket" : String(fields[0])
        }
    }

    @Test("every service's /metrics has each family of the contract and passes promtool check metrics")
    func pagesPassPromtool() async throws {
        let receiver = try WebhookReceiver(secret: WebhookLifecycleTests.secret)
        let file = try WebhookLifecycleTests.endpointsFile(receiver)
        let stack = try await StoreSimStack(
            start: nil,
            entitlement: ["EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000", "WEBHOOK_ENDPOINTS_FILE": file.path],
            inProcess: true)
        try await receiver.run(beside: stack) {
            let apple = UUID().uuidString.lowercased()
            _ = try await stack.buyOnAppStore(account: apple)
            _ = try await stack.buyOnPlay(account: "user-\(UUID().uuidString.prefix(8))")
            try await stack.settle()
            // Read once the view has applied every write (its gauges count what it holds).
            _ = try await stack.checkAfterLedger(apple, at: try await stack.simNow())
            let ledger = try #require(stack.entitlementStack.ledgerHost)
            let pages: [(String, Int, [String])] = [
                ("verifier", try await stack.verifier.httpPort(), try Self.families(of: "verifier")),
                ("ledger", ledger.httpPort(), try Self.families(of: "ledger")),
                ("entitlement", stack.entitlementHTTP, try Self.families(of: "entitlement")),
            ]
            for (service, port, families) in pages {
                let (status, page) = try await httpGet(port: port, path: "/metrics")
                try #require(status == 200)
                for family in families + ["build_info", "service_ready"] {
                    #expect(Self.hasSample(page, family), "\(service) has no sample of \(family)")
                }
                #expect(page.contains("build_info{commit=\"unknown\",service=\"\(service)\",version=\"0.1.0\"} 1\n"))
                #expect(page.contains("service_ready 1\n"), "\(service)")
                let complaints = try Self.promtool(page)
                #expect(complaints == nil, "\(service): \(complaints ?? "")")
            }
        }
        await stack.stop()
    }

    /// Whether `page` has a sample line of `family` (`name value` or `name{…} value`).
    static func hasSample(_ page: String, _ family: String) -> Bool {
        page.split(separator: "\n").contains { $0.hasPrefix(family + " ") || $0.hasPrefix(family + "{") }
    }

    /// What `promtool check metrics` says of `page`; nil when it passes with nothing to say.
    static func promtool(_ page: String) throws -> String? {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).txt")
        try Data(page.utf8).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        process.arguments = ["check", "metrics"]
        process.standardInput = try FileHandle(forReadingFrom: input)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationStatus == 0 && said.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return nil
        }
        return "exit \(process.terminationStatus): \(said)"
    }
}
