import RPC
import Wire

extension CommandRunner {
    /// Runs a Google Play action through the verifier: one typed call, then what Play answered
    /// and the subscription as the ledger recorded it after (with `--json` the answer's JSON).
    func run(_ command: GoogleCommand, transport: any ClientTransport, options: CallOptions) async throws(SubctlError) {
        let answer: (response: GoogleStoreActionResponse, bytes: [UInt8])
        switch command {
        case .revoke(let request): answer = try await call(command, request, transport, options)
        case .refund(let request): answer = try await call(command, request, transport, options)
        case .deferRenewal(let request): answer = try await call(command, request, transport, options)
        case .cancel(let request): answer = try await call(command, request, transport, options)
        }
        try write(answer, options) { response in
            [response.detail] + (response.subscription.map { [OutputText.subscription($0)] } ?? [])
        }
    }

    private func call<Request: ProtoMessage>(
        _ command: GoogleCommand, _ request: Request, _ transport: any ClientTransport, _ options: CallOptions
    ) async throws(SubctlError) -> (response: GoogleStoreActionResponse, bytes: [UInt8]) {
        try await transport.call(command.method, request, as: GoogleStoreActionResponse.self, timeout: options.timeout)
    }
}
