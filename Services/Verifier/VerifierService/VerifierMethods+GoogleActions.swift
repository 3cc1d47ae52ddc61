import Model
import RPC
import Wire

/// The operator's actions at Google Play, registered on the verifier's router: each runs in the
/// caller's name (`actor`), which the ledger's audit event keeps.
extension VerifierMethods {
    static func registerGoogleActions(on router: RPCRouter, google: GoogleAdapter?) {
        router.unary(VerifierRPC.revokeGooglePurchase) { (context, request: RevokeGooglePurchaseRequest) in
            try await required(google, "Google Play").revokePurchase(request, actor: actor(context))
        }
        router.unary(VerifierRPC.refundGoogleOrder) { (context, request: RefundGoogleOrderRequest) in
            try await required(google, "Google Play").refundOrder(request, actor: actor(context))
        }
        router.unary(VerifierRPC.deferGoogleRenewal) { (context, request: DeferGoogleRenewalRequest) in
            try await required(google, "Google Play").deferRenewal(request, actor: actor(context))
        }
        router.unary(VerifierRPC.cancelGoogleSubscription) { (context, request: CancelGoogleSubscriptionRequest) in
            try await required(google, "Google Play").cancelSubscription(request, actor: actor(context))
        }
    }

    /// Who made a call: its certificate or API key identities, or its address without one (as
    /// the ledger names the caller of a grant).
    static func actor(_ context: RPCRequestContext) -> String {
        context.peerIdentities.isEmpty ? "address \(context.peer)" : context.peerIdentities.joined(separator: ",")
    }
}
