import Model
import RPC
import Wire

/// The verifier's RPC methods, registered on a router.
enum VerifierMethods {
    static func register(on router: RPCRouter, apple: AppleAdapter?) {
        let service = VerifierService.serviceName
        router.unary("\(service)/VerifyApplePurchase") { (_, request: VerifyApplePurchaseRequest) in
            try await required(apple, "Apple").verifyPurchase(request)
        }
        router.unary("\(service)/RestorePurchases") { (_, request: RestorePurchasesRequest) in
            if !request.googlePurchases.isEmpty {
                throw RPCError(.unimplemented, "this verifier has no Google Play adapter")
            }
            return try await required(apple, "Apple").restorePurchases(request)
        }
        router.unary("\(service)/RefreshSubscription") { (_, request: RefreshSubscriptionRequest) in
            guard let key = request.key else { throw RPCError(.invalidArgument, "key is missing") }
            switch key.store {
            case .apple: return try await required(apple, "Apple").refresh(key)
            case .google: throw RPCError(.unimplemented, "this verifier has no Google Play adapter")
            }
        }
    }

    /// The adapter, or UNIMPLEMENTED naming the store this instance was not configured for.
    static func required(_ adapter: AppleAdapter?, _ store: String) throws -> AppleAdapter {
        guard let adapter else {
            throw RPCError(.unimplemented, "this verifier is not configured for \(store) (see VERIFIER_STORES)")
        }
        return adapter
    }
}
