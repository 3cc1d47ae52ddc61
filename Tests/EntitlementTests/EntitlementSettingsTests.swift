import Config
import Foundation
import Lifecycle
import ServiceRuntime
import Testing

@testable import EntitlementService

/// Settings of the entitlement service that cannot work together are refused at start, naming
/// the setting.
@Suite("Entitlement: settings that cannot work are refused at start")
struct EntitlementSettingsTests {
    @discardableResult
    static func make(_ values: [String: String]) throws -> ServiceHost {
        let base = ["RPC_LISTEN": "127.0.0.1:0", "HTTP_LISTEN": "127.0.0.1:0"]
        return try EntitlementService.make(
            environment: EnvironmentReader(base.merging(values) { _, new in new }), signal: ShutdownSignal())
    }

    @Test("WEBHOOK_ENDPOINTS_FILE turns the event log on when EVENT_LOG is not set")
    func webhooksTurnTheLogOn() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("endpoints-\(UUID()).json")
        try Data(#"{"endpoints":[]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(!(try Self.make([:]).partNames.contains("event-publisher")))
        let host = try Self.make(["WEBHOOK_ENDPOINTS_FILE": file.path])
        #expect(host.partNames.contains("event-publisher") && host.partNames.contains("webhooks"))
    }

    @Test("EVENT_LOG=false beside WEBHOOK_ENDPOINTS_FILE is refused: webhooks deliver the event log")
    func webhooksWithoutTheLog() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("endpoints-\(UUID()).json")
        try Data(#"{"endpoints":[]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect {
            try Self.make(["EVENT_LOG": "false", "WEBHOOK_ENDPOINTS_FILE": file.path])
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return error.variable == "EVENT_LOG" && error.problem.contains("WEBHOOK_ENDPOINTS_FILE")
        }
    }
}
