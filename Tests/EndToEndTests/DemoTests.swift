import Foundation
import TestSupport
import Testing

/// `make demo` runs the `demo` executable: it must play its year and exit 0, with the answers
/// its story promises at the steps that matter.
@Suite("The demo")
struct DemoTests {
    @Test("the demo plays its year through the real services and exits 0")
    func demoRuns() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("demo-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await runCommand(
            ServiceProcess.binDirectory.appendingPathComponent("demo"), [], directory: directory,
            environment: ["PATH": "/usr/bin:/bin"])
        let text = result.output + result.errors
        #expect(result.status == 0, "\(text)")
        for line in [
            "Alice pro: allowed until 2026-02-01 00:00 UTC — com.example.pro.monthly, active",
            "Alice pro: allowed until 2026-03-17 00:00 UTC — com.example.pro.monthly, grace_period",
            "Bob premium: allowed until 2026-05-04 00:00 UTC — premium_sub, active",
            "Alice pro: denied (revoked) — com.example.pro.monthly, revoked",
            "Bob's new phone premium: allowed until 2027-01-04 00:00 UTC — premium_sub, active",
            "The year is over; everything stopped.",
        ] {
            #expect(text.contains(line), "the demo did not print \"\(line)\":\n\(text)")
        }
        #expect(
            FileManager.default.fileExists(atPath: directory.appendingPathComponent(".run/demo/ledger.sqlite").path))
    }
}
