import Foundation
import TestSupport
import Testing

/// Each service's real `/metrics` page, after a purchase in each store, has a sample of every
/// family of the metrics contract (docs/operations.md) and passes `promtool check metrics`
/// (Debian's `prometheus` package; scripts/install-deps installs it).
@Suite("Metrics pages")
struct MetricsPageTests {
    static let verifierFamilies = [
        "notifications_received_total", "notifications_processed_total", "notifications_duplicate_total",
        "notification_validation_failures_total", "notification_processing_errors_total",
        "notification_delivery_lag_seconds_bucket", "store_api_requests_total",
        "store_api_request_duration_seconds_bucket", "store_api_rate_limited_total", "reconciliation_passes_total",
        "reconciliation_subscriptions_refreshed_total", "reconciliation_changes_found_total",
        "reconciliation_transactions_discovered_total", "reconciliation_voided_purchases_found_total",
    ]
    static let ledgerFamilies = [
        "ledger_inbox_pending", "ledger_inbox_oldest_pending_age_seconds", "google_acknowledgements_pending",
        "google_acknowledgement_oldest_pending_age_seconds", "account_link_conflicts_total",
    ]
    static let entitlementFamilies = [
        "entitlement_active_subscriptions", "entitlement_access_beyond_verified", "entitlement_feed_lag_seconds",
        "entitlement_feed_lag_positions", "event_log_lag_seconds", "webhook_lag_seconds", "webhook_dead_letters",
        "webhook_dead_letters_total",
    ]

    @Test("every service's /metrics has each family of the contract and passes promtool check metrics")
    func pagesPassPromtool() async throws {
        let receiver = try WebhookReceiver(secret: WebhookLifecycleTests.secret)
        let file = try WebhookLifecycleTests.endpointsFile(receiver)
        let stack = try await StoreSimStack(
            start: nil,
            entitlement: ["EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000", "WEBHOOK_ENDPOINTS_FILE": file.path],
            inProcess: true)
        try await receiver.run(beside: stack) {
            _ = try await stack.buyOnAppStore(account: UUID().uuidString.lowercased())
            _ = try await stack.buyOnPlay(account: "user-\(UUID().uuidString.prefix(8))")
            try await stack.settle()
            let ledger = try #require(stack.entitlementStack.ledgerHost)
            let pages: [(String, Int, [String])] = [
                ("verifier", try await stack.verifier.httpPort(), Self.verifierFamilies),
                ("ledger", ledger.httpPort(), Self.ledgerFamilies),
                ("entitlement", stack.entitlementHTTP, Self.entitlementFamilies),
            ]
            for (service, port, families) in pages {
                // The webhook's gauges are set once the deliverer has read the log.
                let page = try await Self.page(port: port, holding: families)
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

    /// The page at `port`, read again (at most 30 s) until it has a sample of each of `families`.
    static func page(port: Int, holding families: [String]) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let (status, page) = try await httpGet(port: port, path: "/metrics")
            try #require(status == 200)
            if families.allSatisfy({ hasSample(page, $0) }) || ContinuousClock.now >= deadline { return page }
            try await Task.sleep(for: .milliseconds(50))
        }
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
