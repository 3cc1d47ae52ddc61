import Foundation
import RPC
import TestSupport
import Testing
import Wire

extension EntitlementStack {
    /// Runs the built `subctl events verify` against this stack's ledger (`from`: its `--from`),
    /// to its end.
    func verifyEventLog(from: UInt64? = nil) async throws -> CommandResult {
        try await runCommand(
            ServiceProcess.binDirectory.appendingPathComponent("subctl"),
            ["events", "verify", "--addr", "127.0.0.1:\(ledgerPort)"] + (from.map { ["--from", "\($0)"] } ?? []))
    }

    /// Expects the event log, once it covers the feed as it stands (at most 60 s), to hold the
    /// lifecycle events of each change after `from` exactly once: `subctl events verify` exits 0
    /// having found nothing wrong.
    func expectEventLogComplete(from: UInt64? = nil, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let newest = try await ledgerClient.call(LedgerRPC.getFeedPosition, GetFeedPositionRequest()).position
        _ = try await eventState("the event log covering position \(newest)", sourceLocation: sourceLocation) {
            $0.started && $0.throughFeedPosition >= newest
        }
        let result = try await verifyEventLog(from: from)
        let lines = result.output.split(separator: "\n")
        #expect(
            result.status == 0 && lines.count == 1 && lines[0].hasPrefix("checked ")
                && lines[0].hasSuffix(": nothing missing, doubled or unexpected"),
            "\(result.output)\(result.errors)", sourceLocation: sourceLocation)
    }

    /// The ledger's event state once `done` holds of it (`poll`: at most 60 s, then an issue
    /// about `what`, and the last answer).
    private func eventState(
        _ what: String, sourceLocation: SourceLocation, until done: (GetEventStateResponse) -> Bool
    ) async throws -> GetEventStateResponse {
        var state = GetEventStateResponse()
        let seen = try await poll(every: .milliseconds(20)) {
            state = try await ledgerClient.call(LedgerRPC.getEventState, GetEventStateRequest())
            return done(state)
        }
        if !seen { Issue.record("never saw \(what): \(state)", sourceLocation: sourceLocation) }
        return state
    }
}
