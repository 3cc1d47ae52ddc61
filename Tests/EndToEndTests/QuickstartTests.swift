import Foundation
import ServiceProcessKit
import TestSupport
import Testing

/// `docs/quickstart.md` run as written: the sandbox (`scripts/run-local --sandbox`, what `make
/// sandbox` runs once built), its receiver, its curl commands and its Python program, each
/// compared with what the page says they print (`Tests/Python/quickstart_check.py`).
@Suite("Quickstart", .serialized, .timeLimit(.minutes(10)))
struct QuickstartTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("the quickstart's commands print what the page says, on both stores, through a month and its webhooks")
    func quickstartAsWritten() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("quickstart-\(UUID().uuidString)")
        let result = try await runCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", Self.root.appendingPathComponent("Tests/Python/quickstart_check.py").path, Self.root.path,
                ServiceProcess.binDirectory.path, work.path,
            ])
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        try? FileManager.default.removeItem(at: work)
    }

    /// The product policies `scripts/run-local` writes: `make run`'s (services) and the
    /// sandbox's, each as capability → store products.
    static func policies() throws -> (run: [String: Set<String>], sandbox: [String: Set<String>]) {
        let script = try String(
            contentsOf: root.appendingPathComponent("scripts/run-local"), encoding: .utf8)
        let bodies = script.components(separatedBy: "<<'POLICY'\n").dropFirst().map {
            $0.components(separatedBy: "\nPOLICY")[0]
        }
        func parse(_ text: String) -> [String: Set<String>] {
            var policy: [String: Set<String>] = [:]
            var capability = ""
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let words = line.split(separator: " ").map(String.init)
                if words.first == "capability", words.count == 2 { capability = words[1] }
                if ["apple", "google"].contains(words.first), words.count == 2 {
                    policy[capability, default: []].insert(words[1])
                }
            }
            return policy
        }
        // The sandbox's comes first in the script, then make run's.
        guard bodies.count == 2 else { throw TestFailure("scripts/run-local has \(bodies.count) policies, not 2") }
        return (parse(bodies[1]), parse(bodies[0]))
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test("make run's example policy grants pro from the simulator's default monthly products; the sandbox's from all")
    func policiesGrantTheSimulatorsProducts() throws {
        let table = try #require(
            try ManualPage("docs/simulator.md").table(with: [
                "store", "product", "kind", "period", "group and level", "price",
            ]))
        let subscriptions = table.filter {
            ($0["kind"] ?? "").hasPrefix("auto-renewable") || ($0["kind"] ?? "").hasPrefix("subscription")
        }
        .compactMap { ManualPage.codeSpans($0["product"] ?? "").first }
        #expect(subscriptions == ["com.example.pro.monthly", "com.example.premium.monthly", "pro_sub", "premium_sub"])
        let (run, sandbox) = try Self.policies()
        // A simulated purchase of either store's first product grants pro under make run.
        #expect(run["pro"]?.isSuperset(of: ["com.example.pro.monthly", "pro_sub"]) == true, "\(run)")
        #expect(sandbox["pro"] == Set(subscriptions), "\(sandbox)")
        #expect(sandbox["premium"] == ["com.example.premium.monthly", "premium_sub"])
        #expect(sandbox["lifetime"] == ["com.example.lifetime", "lifetime_unlock"])
    }
}
