import Foundation
import RPC
import Wire

extension CommandRunner {
    /// Runs an access command against the entitlement service: one typed call, then a table
    /// (or with `--json` the answer's compact JSON, as `call --json` prints it).
    func run(_ command: AccessCommand, transport: any ClientTransport, options: CallOptions) async throws(SubctlError) {
        switch command {
        case .timeline(let account, let capability, let from, let to):
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let request = GetAccessTimelineRequest(
                accountID: account, capability: capability, fromMilliseconds: from ?? now - AccessCommand.defaultPast,
                toMilliseconds: to ?? now + AccessCommand.defaultFuture)
            let answer = try await transport.call(
                command.method, request, as: GetAccessTimelineResponse.self, timeout: options.timeout)
            try write(answer, options) { OutputText.timeline($0) }
        }
    }
}
