import Foundation
import ServiceProcessKit
import TestSupport
import Testing

/// `docs/quickstart.md` run as written: the sandbox (`scripts/run-local --sandbox`, what `make
/// sandbox` runs once built), its receiver, its curl commands and its Python program, each
/// compared with what the page says they print (`Tests/Python/quickstart_check.py`).
@Suite("Quickstart", .serialized)
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
}
