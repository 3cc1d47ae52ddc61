import Model
import RPC
import Wire

/// The App Store support operations, each done in the caller's name (`actor`).
extension VerifierMethods {
    static func registerAppleOperations(on router: RPCRouter, apple: AppleAdapter?) {
        router.unary(VerifierRPC.extendAppleRenewalDate) { (context, request: ExtendAppleRenewalDateRequest) in
            try await required(apple, "the App Store").extendRenewalDate(request, actor: actor(context))
        }
        router.unary(VerifierRPC.setAppleAppAccountToken) { (context, request: SetAppleAppAccountTokenRequest) in
            try await required(apple, "the App Store").setAppAccountToken(request, actor: actor(context))
        }
        router.unary(VerifierRPC.getAppleRefundHistory) { (context, request: GetAppleRefundHistoryRequest) in
            try await required(apple, "the App Store").refundHistory(request, actor: actor(context))
        }
    }

    /// Who makes a call, for the audit trail: its certificate or API key identities, or its
    /// address without one (as the ledger names the callers of its own audited writes).
    static func actor(_ context: RPCRequestContext) -> String {
        context.peerIdentities.isEmpty ? "address \(context.peer)" : context.peerIdentities.joined(separator: ",")
    }
}
