import AppStore
import Clients
import Crypto
import Foundation
import HTTPClient
public import Model
import RPC
public import Wire

/// Purchases an app backend presents: verify one for an account, restore an account's, refresh
/// one from the store.
extension AppleAdapter {
    static let maxSignedTransactionBytes = 16 * 1024
    /// The newest periods of a chain's history recorded with a state: each carries its signed
    /// transaction (about 3 KiB), so 100 stay well inside a frame.
    static let maxRecordedPeriods = 100

    /// Verifies a StoreKit 2 signed transaction or a transaction id, fetches the authoritative
    /// state, records it and links the account: the payload's `appAccountToken`, when present,
    /// must be the account's (PERMISSION_DENIED otherwise); without one the ledger's transfer
    /// policy decides a claim by a second account.
    public func verifyPurchase(_ request: VerifyApplePurchaseRequest) async throws -> VerifyPurchaseResponse {
        try PurchaseChecks.check(request.accountID, VerifyApplePurchaseRequest.Limits.accountID)
        try PurchaseChecks.check(request.idempotencyKey, VerifyApplePurchaseRequest.Limits.idempotencyKey)
        let (transaction, environment, verifier) = try await presentedTransaction(
            signed: request.signedTransaction, id: request.transactionID, environment: request.environment)
        if let token = transaction.appAccountToken,
            !AccountToken.matches(token, accountID: request.accountID, namespace: tokenNamespace)
        {
            throw AppleAdapterError.otherAccountsToken
        }
        let subscription = try await recordCurrentState(
            of: transaction, environment: environment, verifier: verifier, detail: "VerifyApplePurchase")
        let link = try await ledger.linkAccount(
            LinkAccountRequest(
                idempotencyKey: request.idempotencyKey, key: subscription.key, accountID: request.accountID,
                storeAccountRef: transaction.appAccountToken))
        try PurchaseChecks.linked(link)
        // The ledger's state now (a replayed link answers as it did the first time).
        return VerifyPurchaseResponse(
            subscription: try await ledger.subscription(subscription.key) ?? link.subscription ?? subscription,
            newlyLinked: link.outcome == .linked || link.outcome == .transferred,
            previousAccountID: link.previousAccountID)
    }

    /// Re-verifies each presented transaction, walks its transaction history, records the
    /// current state of every purchase found and links it to the account; returns everything
    /// the account owns afterwards, and how each purchase found was linked. With the request's
    /// `reason` (an import) each state is recorded with an `imported` event naming `actor` and
    /// the reason.
    public func restorePurchases(_ request: RestorePurchasesRequest, actor: String = "") async throws
        -> RestorePurchasesResponse
    {
        let imported = request.reason.map {
            AppleStoreAction(name: "IMPORTED", actor: actor, reason: $0, detail: "RestorePurchases", kind: .imported)
        }
        var restored: [RestoredPurchase] = []
        try PurchaseChecks.check(request.accountID, RestorePurchasesRequest.Limits.accountID)
        try PurchaseChecks.check(request.idempotencyKey, RestorePurchasesRequest.Limits.idempotencyKey)
        // The two lists share one bound (each list's own is the same number).
        let limit = RestorePurchasesRequest.Limits.appleTransactionIDsCount
        let count = request.appleSignedTransactions.count + request.appleTransactionIDs.count
        guard limit.admits(count: count) else {
            throw AppleAdapterError.invalidRequest(
                "at most \(limit.maximum) Apple transactions per restore, got \(count)")
        }
        var presented: [(AppleTransaction, AppleEnvironment, AppleSignedDataVerifier)] = []
        for signed in request.appleSignedTransactions {
            presented.append(try await presentedTransaction(signed: signed, id: nil, environment: nil))
        }
        for id in request.appleTransactionIDs {
            presented.append(try await presentedTransaction(signed: nil, id: id, environment: nil))
        }
        var done: Set<String> = []
        for (transaction, environment, verifier) in presented {
            guard let transactionID = transaction.transactionId else { continue }
            let history: [String]
            do {
                history = try await api.transactionHistory(transactionID: transactionID, environment: environment)
            } catch {
                throw AppleAdapterError.store(error)
            }
            // The newest transaction of each purchase (by original transaction id), and the
            // period of every transaction, by purchase.
            var newest: [String: AppleTransaction] = [:]
            var periods: [String: [Period]] = [:]
            for signed in history {
                let found = try Self.refusal { () throws(AppleVerificationError) in
                    try verifier.verifyTransaction(signed, now: now())
                }
                guard let original = found.originalTransactionId ?? found.transactionId else { continue }
                if let period = AppleLifecycle.period(found, raw: signed) {
                    periods[original, default: []].append(period)
                }
                if let known = newest[original], (known.purchaseDate ?? 0) >= (found.purchaseDate ?? 0) { continue }
                newest[original] = found
            }
            if newest.isEmpty, let original = transaction.originalTransactionId { newest[original] = transaction }
            for (original, found) in newest where !done.contains(original) {
                done.insert(original)
                if let token = found.appAccountToken,
                    !AccountToken.matches(token, accountID: request.accountID, namespace: tokenNamespace)
                {
                    // Another account's purchase in the same Apple account: not restored here.
                    restored.append(
                        RestoredPurchase(
                            key: SubscriptionKey(
                                store: .apple, environment: environment.storeEnvironment, storeID: original),
                            link: .kept))
                    continue
                }
                let subscription = try await recordCurrentState(
                    of: found, environment: environment, verifier: verifier, detail: "RestorePurchases",
                    history: periods[original] ?? [], action: imported)
                let link = try await ledger.linkAccount(
                    LinkAccountRequest(
                        idempotencyKey: PurchaseChecks.restoreStepKey(request.idempotencyKey, original),
                        key: subscription.key,
                        accountID: request.accountID, storeAccountRef: found.appAccountToken))
                restored.append(PurchaseChecks.restored(subscription.key, link))
            }
        }
        return RestorePurchasesResponse(
            subscriptions: try await ledger.subscriptions(ofAccount: request.accountID), restored: restored)
    }

    /// Asks the App Store for one subscription's current state and records it (with `action`'s
    /// store-action event when an operator's action asked for it; for an operator's refresh,
    /// `REFRESH`, one whose detail compares the answer with the state the ledger held).
    public func refresh(_ key: SubscriptionKey, action: AppleStoreAction? = nil) async throws
        -> RefreshSubscriptionResponse
    {
        let environment = AppleEnvironment(key.environment)
        guard let verifier = verifiers[environment] else {
            throw AppleAdapterError.environmentNotServed(environment)
        }
        let before = try await ledger.subscription(key)
        var action = action
        if action?.name == PurchaseChecks.refreshAction { action?.refreshedFrom = before }
        let current: AppleCurrentState
        do {
            current = try await currentState(
                original: key.storeID, transactionID: before?.latestOrderID ?? key.storeID,
                kind: before?.productKind ?? .autoRenewable, environment: environment, verifier: verifier)
        } catch {
            throw AppleAdapterError.store(error)
        }
        let after = try await record(
            current, detail: "RefreshSubscription",
            history: await historyPeriods(original: key.storeID, environment: environment, verifier: verifier),
            action: action)
        return RefreshSubscriptionResponse(
            subscription: after, changed: before.map { PurchaseChecks.differs($0, after) } ?? true)
    }

    // MARK: Steps

    /// The transaction the caller presented, verified, with its environment and verifier.
    func presentedTransaction(signed: String?, id: String?, environment requested: StoreEnvironment?)
        async throws(AppleAdapterError) -> (AppleTransaction, AppleEnvironment, AppleSignedDataVerifier)
    {
        switch (signed, id) {
        case (let signed?, nil):
            guard signed.utf8.count <= Self.maxSignedTransactionBytes else {
                throw AppleAdapterError.invalidRequest(
                    "signed_transaction is over \(Self.maxSignedTransactionBytes) bytes")
            }
            // The unverified payload only chooses which environment's verifier checks it.
            let environment = Self.claimedEnvironment(signed) ?? defaultEnvironment
            guard let verifier = verifiers[environment] else {
                throw AppleAdapterError.environmentNotServed(environment)
            }
            let transaction = try Self.refusal { () throws(AppleVerificationError) in
                try verifier.verifyTransaction(signed, now: now())
            }
            do {
                try await checkRevocation(signed)
            } catch {
                throw AppleAdapterError.presented(error)
            }
            return (transaction, environment, verifier)
        case (nil, let id?):
            let limit = VerifyApplePurchaseRequest.Limits.transactionID
            guard limit.admits(id), id.allSatisfy(\.isASCII) else {
                throw AppleAdapterError.invalidRequest(
                    "\(limit.field) must be \(limit.minimum) to \(limit.maximum) ASCII characters")
            }
            var environment: AppleEnvironment =
                requested.map(AppleEnvironment.init) ?? defaultEnvironment
            guard var verifier = verifiers[environment] else {
                throw AppleAdapterError.environmentNotServed(environment)
            }
            let signed: String
            do {
                signed = try await api.transactionInfo(transactionID: id, environment: environment)
            } catch {
                throw await lookupFailure(id, asked: environment, error)
            }
            // Found in the other environment, where the client may ask (APPLE_API_OTHER_ENVIRONMENT):
            // the data is that environment's, checked by its verifier.
            if let claimed = Self.claimedEnvironment(signed), claimed != environment {
                guard let other = verifiers[claimed] else { throw AppleAdapterError.environmentNotServed(claimed) }
                environment = claimed
                verifier = other
            }
            let transaction = try Self.refusal { () throws(AppleVerificationError) in
                try verifier.verifyTransaction(signed, now: now())
            }
            return (transaction, environment, verifier)
        default:
            throw AppleAdapterError.invalidRequest("set exactly one of signed_transaction and transaction_id")
        }
    }

    /// What a failed look-up of the transaction id `id` in `asked` means. Apple's error 4040010
    /// says only that the id is not in the environment asked: the other one is asked too (by the
    /// client itself when APPLE_API_OTHER_ENVIRONMENT allows it, else here, only to tell the two
    /// answers apart). An id in neither is NOT_FOUND naming both; one in the other environment
    /// only, which the configuration does not take it from, is `.storeOtherEnvironment`; when the
    /// other environment cannot be asked, NOT_FOUND names the one that was.
    private func lookupFailure(_ id: String, asked: AppleEnvironment, _ error: any Error) async -> AppleAdapterError {
        let notFound = AppStoreServerAPIClient.transactionIDNotFoundErrorCode
        guard let error = error as? AppStoreAPIError, error.apiErrorCode == notFound else {
            return .store(error)
        }
        let other: AppleEnvironment = asked == .production ? .sandbox : .production
        // The client asked the other environment itself and found the id in neither.
        guard error.code == .wrongEnvironment else {
            return .transactionNotFound(id: id, environments: [asked, other])
        }
        do {
            _ = try await api.transactionInfo(transactionID: id, environment: other)
            return .store(error)
        } catch {
            return .transactionNotFound(
                id: id, environments: error.apiErrorCode == notFound ? [asked, other] : [asked])
        }
    }

    /// Fetches the authoritative state of `transaction`'s purchase and records it, with the
    /// periods of its chain's history (`history`, or read from the App Store when nil), after
    /// an operator's `action` when one is given.
    func recordCurrentState(
        of transaction: AppleTransaction, environment: AppleEnvironment, verifier: AppleSignedDataVerifier,
        detail: String, history known: [Period]? = nil, action: AppleStoreAction? = nil
    ) async throws -> Subscription {
        let current: AppleCurrentState
        do {
            current = try await currentState(of: transaction, environment: environment, verifier: verifier)
        } catch {
            throw AppleAdapterError.store(error)
        }
        let original = current.transaction.originalTransactionId ?? current.transaction.transactionId ?? ""
        var history = known ?? []
        if known == nil, AppleLifecycle.productKind(current.transaction.type) == .autoRenewable {
            history = await historyPeriods(original: original, environment: environment, verifier: verifier)
        }
        return try await record(current, detail: detail, history: history, action: action)
    }

    /// Records a fetched state with a `stateRefreshed` event naming what asked for it (or, after
    /// an operator's `action` at the App Store, a `storeAction` event naming the action, the
    /// caller and the reason), the period of its transaction and those of the chain's history.
    func record(_ current: AppleCurrentState, detail: String, history: [Period], action: AppleStoreAction? = nil)
        async throws -> Subscription
    {
        let subscription: Subscription
        do {
            subscription = try AppleLifecycle.subscription(
                transaction: current.transaction, renewalInfo: current.renewalInfo, status: current.status, now: now())
        } catch {
            throw AppleAdapterError.unrecordable(error)
        }
        let actionDetail = action.map {
            $0.name == PurchaseChecks.refreshAction
                ? PurchaseChecks.refreshDetail(before: $0.refreshedFrom, after: subscription) : $0.detail
        }
        let event = LifecycleEvent(
            key: subscription.key, kind: action?.kind ?? .stateRefreshed,
            storeTimeMilliseconds: subscription.storeTimeMilliseconds, storeType: "API",
            storeSubtype: action?.kind == .storeAction ? action?.name : nil, state: subscription.state,
            detail: actionDetail ?? detail,
            rawTransaction: current.signedTransaction, rawRenewalInfo: current.signedRenewalInfo, actor: action?.actor,
            reason: action?.reason)
        let periods =
            history + [AppleLifecycle.period(current.transaction, raw: current.signedTransaction)].compactMap { $0 }
        return try await ledger.recordFetchedState(
            subscription, event: event, periods: Array(periods.suffix(Self.maxRecordedPeriods)),
            keyPrefix: "apple-state-")
    }

    // MARK: Checks and mapping

    /// The `environment` an unverified JWS payload claims, if it is one this module knows.
    static func claimedEnvironment(_ jws: String) -> AppleEnvironment? {
        guard let parsed = try? CompactJWS(jws),
            let object = try? JSONSerialization.jsonObject(with: Data(parsed.payload)) as? [String: Any],
            let name = object["environment"] as? String
        else { return nil }
        return AppleEnvironment(rawValue: name)
    }

    /// `body`'s verification of a signed transaction (presented, or from its history), a refusal
    /// as the adapter's error.
    static func refusal<T>(_ body: () throws(AppleVerificationError) -> T) throws(AppleAdapterError) -> T {
        do {
            return try body()
        } catch {
            throw AppleAdapterError.presented(error)
        }
    }
}
