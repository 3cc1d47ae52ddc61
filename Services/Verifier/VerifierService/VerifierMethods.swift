import Clients
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
        router.unary(VerifierRPC.restorePurchases, limits: .large) { (context, request: RestorePurchasesRequest) in
            let actor = context.actor
            let work = { try await restore(request, actor: actor, apple: apple, google: google) }
            // An import's restore runs to its end even when its caller goes away (killed, or
            // past its deadline): what the store answered is recorded, and the import run
            // again finds it in the ledger instead of asking the store a second time.
            var response = try await request.reason == nil ? work() : Task { try await work() }.value
            if let ledger = apple?.ledger ?? google?.ledger { response.position = try await ledger.feedPosition() }
            return response
        }
        // With a reason, an operator's refresh: recorded as a `REFRESH` store action in the caller's
        // name, through the path every store action's state takes.
        router.unary(VerifierRPC.refreshSubscription) { (context, request: RefreshSubscriptionRequest) in
            guard let key = request.key else { throw PurchaseRequestError.invalidRequest("key is missing") }
            if let reason = request.reason {
                try PurchaseChecks.check(reason, RefreshSubscriptionRequest.Limits.reason)
            }
            let asked = request.reason.map { (actor: context.actor, reason: $0) }
            var response: RefreshSubscriptionResponse
            switch key.store {
            case .apple:
                let adapter = try required(apple, "the App Store")
                response = try await adapter.refresh(
                    key,
                    action: asked.map {
                        AppleStoreAction(name: PurchaseChecks.refreshAction, actor: $0.actor, reason: $0.reason)
                    })
                response.position = try await adapter.ledger.feedPosition()
            case .google:
                let adapter = try required(google, "Google Play")
                response = try await adapter.refresh(key, asked: asked)
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
    /// presented, then answers everything the account owns and how each purchase was linked.
    ///
    /// With `reason` (an import, in `actor`'s name) each state is recorded with an `imported`
    /// event, a purchase the ledger already holds for the account is answered as
    /// ALREADY_RECORDED without asking the store (so an import run again after a stop does not
    /// call the store twice for what it finished), and a Google purchase another account holds is
    /// answered as KEPT or REFUSED instead of failing the call.
    static func restore(
        _ request: RestorePurchasesRequest, actor: String, apple: AppleAdapter?, google: GoogleAdapter?
    ) async throws -> RestorePurchasesResponse {
        try PurchaseChecks.check(request.accountID, RestorePurchasesRequest.Limits.accountID)
        try PurchaseChecks.check(request.idempotencyKey, RestorePurchasesRequest.Limits.idempotencyKey)
        if let reason = request.reason { try PurchaseChecks.check(reason, RestorePurchasesRequest.Limits.reason) }
        let googleLimit = RestorePurchasesRequest.Limits.googlePurchasesCount
        guard googleLimit.admits(count: request.googlePurchases.count) else {
            throw PurchaseRequestError.invalidRequest(
                "at most \(googleLimit.maximum) Google purchases per restore, got \(request.googlePurchases.count)")
        }
        var request = request
        var recorded: [RestoredPurchase] = []
        var googlePurchases = Array(request.googlePurchases.enumerated())
        if request.reason != nil, let ledger = apple?.ledger ?? google?.ledger {
            var appleIDs: [String] = []
            for id in request.appleTransactionIDs {
                if let key = try await held(Store.apple, id, by: request.accountID, ledger) {
                    recorded.append(RestoredPurchase(key: key, link: .alreadyRecorded))
                } else {
                    appleIDs.append(id)
                }
            }
            request.appleTransactionIDs = appleIDs
            var remaining: [(offset: Int, element: GooglePurchaseRef)] = []
            for purchase in googlePurchases {
                if let key = try await held(Store.google, purchase.element.purchaseToken, by: request.accountID, ledger)
                {
                    recorded.append(RestoredPurchase(key: key, link: .alreadyRecorded))
                } else {
                    remaining.append(purchase)
                }
            }
            googlePurchases = remaining
        }
        var response = RestorePurchasesResponse()
        if !request.appleSignedTransactions.isEmpty || !request.appleTransactionIDs.isEmpty {
            response = try await required(apple, "the App Store").restorePurchases(request, actor: actor)
        }
        response.restored = recorded + response.restored
        guard !googlePurchases.isEmpty else {
            if response.subscriptions.isEmpty, !recorded.isEmpty, let ledger = apple?.ledger ?? google?.ledger {
                response.subscriptions = try await ledger.subscriptions(ofAccount: request.accountID)
            }
            return response
        }
        let adapter = try required(google, "Google Play")
        let imported = request.reason.map { (actor: actor, reason: $0) }
        for (index, purchase) in googlePurchases {
            let verify = VerifyGooglePurchaseRequest(
                accountID: request.accountID, packageName: purchase.packageName, productID: purchase.productID,
                purchaseToken: purchase.purchaseToken,
                idempotencyKey: PurchaseChecks.restoreStepKey(request.idempotencyKey, "g\(index)"))
            response.restored.append(try await restoreGoogle(verify, imported: imported, adapter: adapter))
        }
        response.subscriptions = try await adapter.ledger.subscriptions(ofAccount: request.accountID)
        return response
    }

    /// The key under which the ledger holds `storeID` for `accountID`, in either environment.
    private static func held(
        _ store: Store, _ storeID: String, by accountID: String, _ ledger: any LedgerClientProtocol
    )
        async throws -> SubscriptionKey?
    {
        for environment in [StoreEnvironment.production, .sandbox] {
            let key = SubscriptionKey(store: store, environment: environment, storeID: storeID)
            if let subscription = try await ledger.subscription(key), subscription.accountID == accountID {
                return key
            }
        }
        return nil
    }

    /// One Google purchase of a restore. For an import (`imported` set), another account's
    /// hold on it is its outcome rather than the call's failure.
    private static func restoreGoogle(
        _ request: VerifyGooglePurchaseRequest, imported: (actor: String, reason: String)?, adapter: GoogleAdapter
    ) async throws -> RestoredPurchase {
        let key = GoogleAdapter.key(request.purchaseToken, test: false)
        let response: VerifyPurchaseResponse
        do {
            response = try await adapter.verifyPurchase(request, imported: imported)
        } catch {
            guard imported != nil else { throw error }
            let refusal = error as? PurchaseRequestError
            let link: RestoreLink
            if refusal == .transferRefused {
                link = .refused
            } else if refusal == .keptByFirstAccount {
                link = .kept
            } else if case .otherAccount? = error as? GoogleAdapterError {
                link = .kept
            } else {
                throw error
            }
            let holder = try await adapter.ledger.subscription(key)
            return RestoredPurchase(key: key, link: link, otherAccountID: holder?.accountID)
        }
        let link: RestoreLink =
            response.newlyLinked ? (response.previousAccountID == nil ? .linked : .transferred) : .alreadyLinked
        return RestoredPurchase(
            key: response.subscription?.key ?? key, link: link, otherAccountID: response.previousAccountID)
    }

    /// The adapter, or a refusal naming the store this instance was not configured for.
    static func required<Adapter>(_ adapter: Adapter?, _ store: String) throws(PurchaseRequestError) -> Adapter {
        guard let adapter else { throw .storeNotConfigured(store) }
        return adapter
    }
}
