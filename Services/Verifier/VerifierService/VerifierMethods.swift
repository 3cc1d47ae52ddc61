import Model
import RPC
import Wire

/// The verifier's RPC methods, registered on a router.
enum VerifierMethods {
    static func register(on router: RPCRouter, apple: AppleAdapter?, google: GoogleAdapter?) {
        router.unary(VerifierRPC.verifyApplePurchase, limits: .large) { (_, request: VerifyApplePurchaseRequest) in
            let adapter = try required(apple, "the App Store")
            var response = try await adapter.verifyPurchase(request)
            response.position = try await adapter.ledger.feedPosition()
            return response
        }
        router.unary(VerifierRPC.verifyGooglePurchase) { (_, request: VerifyGooglePurchaseRequest) in
            let adapter = try required(google, "Google Play")
            var response = try await adapter.verifyPurchase(request)
            response.position = try await adapter.ledger.feedPosition()
            return response
        }
        router.unary(VerifierRPC.restorePurchases, limits: .large) { (_, request: RestorePurchasesRequest) in
            var response = try await restore(request, apple: apple, google: google)
            if let ledger = apple?.ledger ?? google?.ledger { response.position = try await ledger.feedPosition() }
            return response
        }
        router.unary(VerifierRPC.refreshSubscription) { (_, request: RefreshSubscriptionRequest) in
            guard let key = request.key else { throw PurchaseRequestError.invalidRequest("key is missing") }
            var response: RefreshSubscriptionResponse
            switch key.store {
            case .apple:
                let adapter = try required(apple, "the App Store")
                response = try await adapter.refresh(key)
                response.position = try await adapter.ledger.feedPosition()
            case .google:
                let adapter = try required(google, "Google Play")
                response = try await adapter.refresh(key)
                response.position = try await adapter.ledger.feedPosition()
            case .promotional:
                throw PurchaseRequestError.invalidRequest("a promotional grant has no store to refresh it from")
            }
            return response
        }
        registerGoogleActions(on: router, google: google)
        registerAppleOperations(on: router, apple: apple)
    }

    /// Restores Apple purchases through their history and re-verifies each Google purchase
    /// presented, then answers everything the account owns.
    static func restore(_ request: RestorePurchasesRequest, apple: AppleAdapter?, google: GoogleAdapter?) async throws
        -> RestorePurchasesResponse
    {
        try PurchaseChecks.check(request.accountID, RestorePurchasesRequest.Limits.accountID)
        try PurchaseChecks.check(request.idempotencyKey, RestorePurchasesRequest.Limits.idempotencyKey)
        let googleLimit = RestorePurchasesRequest.Limits.googlePurchasesCount
        guard googleLimit.admits(count: request.googlePurchases.count) else {
            throw PurchaseRequestError.invalidRequest(
                "at most \(googleLimit.maximum) Google purchases per restore, got \(request.googlePurchases.count)")
        }
        var response = RestorePurchasesResponse()
        if !request.appleSignedTransactions.isEmpty || !request.appleTransactionIDs.isEmpty {
            response = try await required(apple, "the App Store").restorePurchases(request)
        }
        guard !request.googlePurchases.isEmpty else { return response }
        let adapter = try required(google, "Google Play")
        for (index, purchase) in request.googlePurchases.enumerated() {
            _ = try await adapter.verifyPurchase(
                VerifyGooglePurchaseRequest(
                    accountID: request.accountID, packageName: purchase.packageName, productID: purchase.productID,
                    purchaseToken: purchase.purchaseToken,
                    idempotencyKey: PurchaseChecks.restoreStepKey(request.idempotencyKey, "g\(index)")))
        }
        return RestorePurchasesResponse(
            subscriptions: try await adapter.ledger.subscriptions(ofAccount: request.accountID))
    }

    /// The adapter, or a refusal naming the store this instance was not configured for.
    static func required<Adapter>(_ adapter: Adapter?, _ store: String) throws(PurchaseRequestError) -> Adapter {
        guard let adapter else { throw .storeNotConfigured(store) }
        return adapter
    }
}
