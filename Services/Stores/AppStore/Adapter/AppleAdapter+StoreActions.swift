import AppStore
import Clients
import Foundation
import HTTPClient
public import Model
public import Wire

/// An operator's action at the App Store, as its audit event names it: the action
/// (`store_subtype`), who asked (`actor`), the reason given, and the store's answer (`detail`).
public struct AppleStoreAction: Sendable, Hashable {
    /// `EXTEND_RENEWAL_DATE`, `SET_APP_ACCOUNT_TOKEN`, `REFUND_HISTORY`, ….
    public var name: String
    /// The caller's certificate or API key identity, or its address when it has none.
    public var actor: String
    public var reason: String
    /// The store's answer, in short.
    public var detail: String
    /// The event recorded: `storeAction` (with `name` as its subtype), or `imported` for an
    /// import's restore.
    public var kind: EventKind
    /// For an operator's refresh (`REFRESH`): the state the ledger held before (nil: none); the
    /// event's detail then says whether the App Store's answer changed it.
    public var refreshedFrom: Subscription?

    public init(name: String, actor: String, reason: String, detail: String = "", kind: EventKind = .storeAction) {
        self.name = name
        self.actor = actor
        self.reason = reason
        self.detail = detail
        self.kind = kind
    }
}

/// Support operations at the App Store. Each checks its request, looks the transaction up
/// (NOT_FOUND names the environments asked), acts, then reads the purchase's state from the
/// App Store and records it with a `storeAction` event (`AppleStoreAction`) through the path every
/// fetched state takes. A refusal from the App Store records nothing.
extension AppleAdapter {
    /// Extend a Subscription Renewal Date: moves the subscription's renewal date `days` later
    /// (1 to 90; Apple allows two extensions in 365 days), then records the state Apple answers
    /// afterwards. Any transaction id of the subscription may be given; Apple is called with
    /// the original one. The same `request_id` again answers the first result.
    public func extendRenewalDate(_ request: ExtendAppleRenewalDateRequest, actor: String) async throws
        -> ExtendAppleRenewalDateResponse
    {
        try Self.checkAction(
            request.originalTransactionID, ExtendAppleRenewalDateRequest.Limits.originalTransactionID,
            reason: request.reason, ExtendAppleRenewalDateRequest.Limits.reason)
        try Self.checkExtension(days: request.days, reasonCode: request.reasonCode)
        let requestID = try Self.requestUUID(request.requestID)
        let (transaction, environment, verifier) = try await presentedTransaction(
            signed: nil, id: request.originalTransactionID, environment: request.environment)
        guard AppleLifecycle.productKind(transaction.type) == .autoRenewable else {
            throw AppleAdapterError.invalidRequest(
                "transaction \(request.originalTransactionID) is not an auto-renewable subscription; "
                    + "only those have a renewal date")
        }
        let original = transaction.originalTransactionId ?? request.originalTransactionID
        let body = AppleRenewalExtensionRequest(
            extendByDays: Int(request.days), extendReasonCode: Int(request.reasonCode),
            requestIdentifier: requestID)
        let extended: AppleRenewalExtension
        do {
            extended = try await api.extendRenewalDate(
                originalTransactionID: original, body, environment: environment)
        } catch {
            throw AppleAdapterError.action("EXTEND_RENEWAL_DATE", error)
        }
        let effective = extended.effectiveDate ?? 0
        let action = AppleStoreAction(
            name: "EXTEND_RENEWAL_DATE", actor: actor, reason: request.reason,
            detail: "extended by \(request.days) days (extendReasonCode \(request.reasonCode), requestIdentifier "
                + "\(body.requestIdentifier)): effectiveDate \(EpochTime.iso8601(effective)), webOrderLineItemId "
                + (extended.webOrderLineItemId ?? "none"))
        let subscription = try await recordAfterAction(
            transaction, environment: environment, verifier: verifier, action: action)
        return ExtendAppleRenewalDateResponse(
            subscription: subscription, effectiveTimeMilliseconds: effective,
            webOrderLineItemID: extended.webOrderLineItemId ?? "")
    }

    /// Set App Account Token: sets the purchase's `appAccountToken` to the one `account_id`
    /// buys with (`AccountToken.expected`, in this verifier's namespace), records the state
    /// Apple answers afterwards, and links the purchase to the account under the ledger's
    /// transfer policy (PERMISSION_DENIED when the policy keeps it with another account; the
    /// token stays set at Apple).
    public func setAppAccountToken(_ request: SetAppleAppAccountTokenRequest, actor: String) async throws
        -> SetAppleAppAccountTokenResponse
    {
        try Self.checkAction(
            request.originalTransactionID, SetAppleAppAccountTokenRequest.Limits.originalTransactionID,
            reason: request.reason, SetAppleAppAccountTokenRequest.Limits.reason)
        try PurchaseChecks.check(request.accountID, SetAppleAppAccountTokenRequest.Limits.accountID)
        let (transaction, environment, verifier) = try await presentedTransaction(
            signed: nil, id: request.originalTransactionID, environment: request.environment)
        let original = transaction.originalTransactionId ?? request.originalTransactionID
        let token = AccountToken.expected(for: request.accountID, namespace: tokenNamespace)
        do {
            try await api.setAppAccountToken(
                originalTransactionID: original, appAccountToken: token, environment: environment)
        } catch {
            throw AppleAdapterError.action("SET_APP_ACCOUNT_TOKEN", error)
        }
        let action = AppleStoreAction(
            name: "SET_APP_ACCOUNT_TOKEN", actor: actor, reason: request.reason,
            detail: "appAccountToken \(token) set for account \(request.accountID.printableASCII(limit: 256))")
        let subscription = try await recordAfterAction(
            transaction, environment: environment, verifier: verifier, action: action)
        let link = try await ledger.linkAccount(
            LinkAccountRequest(
                idempotencyKey: "set-token-" + String(token.prefix(36)) + "-"
                    + String(subscription.key.storeID.prefix(64)),
                key: subscription.key, accountID: request.accountID, storeAccountRef: token))
        try PurchaseChecks.linked(link)
        return SetAppleAppAccountTokenResponse(
            subscription: try await ledger.subscription(subscription.key) ?? link.subscription ?? subscription,
            appAccountToken: token, previousAccountID: link.previousAccountID)
    }

    /// Get Refund History: every refunded transaction of the customer `transaction_id` belongs
    /// to (every page), each verified, with whether the ledger had recorded its refund. The
    /// read is recorded on the purchase asked about and on each purchase with a refund, with
    /// the state the App Store answers now, which records any refund the ledger did not know
    /// (as reconciliation's refresh does).
    public func refundHistory(_ request: GetAppleRefundHistoryRequest, actor: String) async throws
        -> GetAppleRefundHistoryResponse
    {
        try Self.checkAction(
            request.transactionID, GetAppleRefundHistoryRequest.Limits.transactionID, reason: request.reason,
            GetAppleRefundHistoryRequest.Limits.reason)
        let (asked, environment, verifier) = try await presentedTransaction(
            signed: nil, id: request.transactionID, environment: request.environment)
        let signedRefunds: [String]
        do {
            signedRefunds = try await api.refundHistory(transactionID: request.transactionID, environment: environment)
        } catch {
            throw AppleAdapterError.action("REFUND_HISTORY", error)
        }
        var refunds: [AppleRefund] = []
        // Each purchase once, the one asked about first, with a refunded transaction of it.
        var purchases: [(String, AppleTransaction)] = [(Self.storeID(of: asked), asked)]
        for signed in signedRefunds {
            let answering = apiVerifier(for: signed, environment: environment, fallback: verifier)
            let refunded = try Self.refusal { () throws(AppleVerificationError) in
                try answering.verifyTransaction(signed, now: now())
            }
            let storeID = Self.storeID(of: refunded)
            let key = SubscriptionKey(store: .apple, environment: environment.storeEnvironment, storeID: storeID)
            refunds.append(
                AppleRefund(
                    transactionID: refunded.transactionId ?? "", originalTransactionID: storeID,
                    productID: refunded.productId ?? "", purchaseTimeMilliseconds: refunded.purchaseDate ?? 0,
                    revocationTimeMilliseconds: refunded.revocationDate ?? 0,
                    revocationReason: Int32(clamping: refunded.revocationReason ?? 0),
                    knownBefore: try await knowsRefund(of: refunded, key: key)))
            if !purchases.contains(where: { $0.0 == storeID }) { purchases.append((storeID, refunded)) }
        }
        let unknown = refunds.filter { !$0.knownBefore }.map(\.transactionID)
        for (storeID, transaction) in purchases {
            let mine = refunds.filter { $0.originalTransactionID == storeID }.map(\.transactionID)
            let action = AppleStoreAction(
                name: "REFUND_HISTORY", actor: actor, reason: request.reason,
                detail: "\(refunds.count) refunded transactions in the customer's history"
                    + (mine.isEmpty ? "" : "; of this purchase: " + mine.joined(separator: ", "))
                    + (unknown.isEmpty ? "" : "; not recorded before: " + unknown.joined(separator: ", ")))
            _ = try await recordAfterAction(transaction, environment: environment, verifier: verifier, action: action)
        }
        return GetAppleRefundHistoryResponse(refunds: refunds)
    }

    // MARK: Steps

    /// Reads the state of `transaction`'s purchase from the App Store after `action` and records
    /// it with the action's event, with the periods of its chain's history.
    func recordAfterAction(
        _ transaction: AppleTransaction, environment: AppleEnvironment, verifier: AppleSignedDataVerifier,
        action: AppleStoreAction
    ) async throws -> Subscription {
        try await recordCurrentState(
            of: transaction, environment: environment, verifier: verifier, detail: action.name, action: action)
    }

    /// Whether the ledger has recorded the refund of `refunded`: a recorded period of that
    /// transaction with a revocation, or (a consumable has no period) the purchase revoked with
    /// it as its latest transaction.
    private func knowsRefund(of refunded: AppleTransaction, key: SubscriptionKey) async throws -> Bool {
        guard let (subscription, periods) = try await ledger.recordedState(key) else { return false }
        let id = refunded.transactionId
        if periods.contains(where: { $0.periodID == id && $0.revokedTimeMilliseconds != nil }) { return true }
        return subscription.latestOrderID == id && subscription.revokedTimeMilliseconds != nil
    }

    /// The ledger's store id of a transaction's purchase: its original transaction id.
    static func storeID(of transaction: AppleTransaction) -> String {
        transaction.originalTransactionId ?? transaction.transactionId ?? ""
    }

    /// Checks an operation's transaction id (ASCII, within `idLimit`) and its reason.
    static func checkAction(_ id: String, _ idLimit: FieldLimit, reason: String, _ reasonLimit: FieldLimit)
        throws(AppleAdapterError)
    {
        guard idLimit.admits(id), id.allSatisfy(\.isASCII) else {
            throw .invalidRequest("\(idLimit.field) must be \(idLimit.minimum) to \(idLimit.maximum) ASCII characters")
        }
        guard reasonLimit.admits(reason) else {
            throw .invalidRequest(reasonLimit.requirement + " (why the caller acts, for the audit trail)")
        }
    }
}
