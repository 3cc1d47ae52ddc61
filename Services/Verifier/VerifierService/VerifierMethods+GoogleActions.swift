import Model
import RPC
import Wire

/// The operator's actions at Google Play, registered on the verifier's router: each runs in the
/// caller's name (`actor`), which the ledger's audit event keeps.
extension VerifierMethods {
    static func registerGoogleActions(on router: RPCRouter, google: GoogleAdapter?) {
        router.unary(VerifierRPC.revokeGooglePurchase) { (context, request: RevokeGooglePurchaseRequest) in
            try await required(google, "Google Play").revokePurchase(request, actor: context.actor)
        }
        router.unary(VerifierRPC.refundGoogleOrder) { (context, request: RefundGoogleOrderRequest) in
            try await required(google, "Google Play").refundOrder(request, actor: context.actor)
        }
        router.unary(VerifierRPC.deferGoogleRenewal) { (context, request: DeferGoogleRenewalRequest) in
            try await required(google, "Google Play").deferRenewal(request, actor: context.actor)
        }
        router.unary(VerifierRPC.cancelGoogleSubscription) { (context, request: CancelGoogleSubscriptionRequest) in
            try await required(google, "Google Play").cancelSubscription(request, actor: context.actor)
        }
    }

}
