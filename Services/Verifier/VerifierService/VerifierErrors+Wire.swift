import AppStore
import GooglePlay
import HTTPClient
import Model
import Wire

// The one place where the verifier's errors become wire statuses: the RPC layer answers a call
// that threw one of them with its `rpcError`. Errors from the ledger client are `RPCError`
// already (the ledger's own answer, or the transport's UNAVAILABLE or DEADLINE_EXCEEDED when it
// could not be reached): they reach the caller untouched, as the ledger gave them. The
// notification endpoints answer HTTP statuses of their own and never come here.

/// A verifier error that knows the status and message its caller sees.
protocol VerifierWireError: RPCErrorConvertible, CustomStringConvertible, Sendable {
    var wireStatus: (code: StatusCode, message: String) { get }
}

extension VerifierWireError {
    /// The answer of a call that threw this error; the error itself is its cause, in this process only.
    public var rpcError: RPCError {
        let (code, message) = wireStatus
        return RPCError(code, message, cause: self)
    }

    /// The error as its caller sees it, so that logs and an inbox entry's error read the same.
    public var description: String { rpcError.description }
}

extension PurchaseRequestError: VerifierWireError {
    var wireStatus: (code: StatusCode, message: String) {
        switch self {
        case .invalidRequest(let problem): (.invalidArgument, problem)
        case .transferRefused:
            (.permissionDenied, "the purchase belongs to another account and the transfer policy refuses moving it")
        case .keptByFirstAccount:
            (.permissionDenied, "the purchase stays with the account that claimed it first (transfer policy keep)")
        case .storeNotConfigured(let store):
            (.unimplemented, "this verifier is not configured for \(store) (see VERIFIER_STORES)")
        }
    }
}

extension AppleAdapterError: VerifierWireError {
    var wireStatus: (code: StatusCode, message: String) {
        switch self {
        case .invalidRequest(let problem): (.invalidArgument, problem)
        case .environmentNotServed(let environment):
            (.failedPrecondition, "this verifier does not serve Apple \(environment.rawValue)")
        case .consentMissing(let transactionID):
            (
                .failedPrecondition,
                "consumption information for \(transactionID.printableASCII(limit: 64)) is sent only with the "
                    + "customer's consent: set customer_consented once the customer has agreed"
            )
        case .otherAccountsToken:
            (.permissionDenied, "the purchase was made with another account's appAccountToken")
        case .transactionRefused(let error):
            (.invalidArgument, "the signed transaction is refused: \(error.code): \(error.message)")
        case .checkIncomplete(let error): (.unavailable, "\(error.code): \(error.message)")
        case .unrecordable(let error): (.invalidArgument, "the transaction cannot be recorded: \(error)")
        case .storeNotFound(let error):
            (.notFound, "the App Store does not know this transaction (\(error.message))")
        case .transactionNotFound(let id, let environments):
            (
                .notFound,
                "no App Store transaction \(id.printableASCII(limit: 64)) in "
                    + environments.map(\.rawValue).joined(separator: " or ")
                    + "; check the id (any transaction id of the subscription works)"
            )
        case .storeOtherEnvironment:
            (.failedPrecondition, "the transaction belongs to the other App Store environment")
        case .storeUnavailable(let error): (.unavailable, "\(error)")
        case .storeRefusedRequest(let error): (.invalidArgument, "\(error)")
        case .storeDataRefused(let error):
            (.unavailable, "the App Store answered with data that does not verify: \(error)")
        case .storeFailed(let error): (.internal, "\(error)")
        case .actionRefused(let action, let error): Self.actionStatus(action, error)
        }
    }

    /// What the App Store's refusal of an operator's action tells the caller to fix: its error
    /// codes (App Store Server API error objects) told apart.
    static func actionStatus(_ action: String, _ error: AppStoreAPIError) -> (code: StatusCode, message: String) {
        let said =
            "the App Store refused \(action) (HTTP \(error.httpStatus ?? 0), error \(error.apiErrorCode ?? 0)): "
            + error.message
        switch (error.httpStatus, error.apiErrorCode) {
        case (429?, _):
            let wait = error.retryAfter.map { "after \($0.components.seconds) s (Retry-After)" } ?? "later"
            return (.resourceExhausted, "\(said); the App Store limits its request rate: try again \(wait)")
        case (404?, 4_040_009?):
            return (
                .notFound,
                "\(said); no mass extension has that request id for that product: check both (the status is read "
                    + "with the product id and request id the extension was started with)"
            )
        case (400?, 4_000_027?), (400?, 4_000_028?):
            return (
                .invalidArgument,
                "\(said); storefront codes are ISO 3166-1 alpha-3 (such as USA); leave them out for every storefront"
            )
        case (404?, _):
            return (
                .notFound,
                "\(said); check the transaction id (an original transaction id of a subscription for an extension)"
            )
        case (_, 4_030_005?):
            return (
                .failedPrecondition,
                "\(said); Apple extends a subscription at most twice in 365 days: compensate it another way"
            )
        case (_, 4_030_007?):
            return (.failedPrecondition, "\(said); a family-shared subscription is extended through the purchaser's")
        case (_, 4_030_004?):
            return (
                .failedPrecondition,
                "\(said); Apple extends only an active, paid subscription (not expired, in billing retry, past its "
                    + "end in grace, or in a free offer period): refresh it to see its state"
            )
        case (403?, _): return (.failedPrecondition, "\(said); the App Store does not allow this for this purchase")
        default: return (.invalidArgument, "\(said); check the request's fields")
        }
    }
}

extension GoogleAdapterError: VerifierWireError {
    var wireStatus: (code: StatusCode, message: String) {
        switch self {
        case .invalidRequest(let problem): (.invalidArgument, problem)
        case .packageNotServed(let package):
            (.failedPrecondition, "package \(package.prefix(100)) is not served by this verifier")
        case .otherAccount:
            (.permissionDenied, "the purchase was made for another account (obfuscatedExternalAccountId)")
        case .wrongProduct(let productID):
            (.invalidArgument, "the purchase token is not for product \(productID.prefix(100))")
        case .notInLedger(let key):
            (.notFound, "the ledger has no Google purchase \(key.storeID.prefix(40))…; verify it first")
        case .unrecordable(let error): (.failedPrecondition, "Google's answer cannot be recorded: \(error)")
        case .storeNotFound(let error):
            (.notFound, "Google does not know this purchase token (\(error.message))")
        case .storeUnavailable(let error): (.unavailable, "\(error)")
        case .storeRefusedRequest(let error): (.invalidArgument, "\(error)")
        case .storeFailed(let error): (.internal, "\(error)")
        case .presentedPurchase(let error, let purchase): Self.presentedStatus(error, purchase)
        case .actionRefused(let error, let action): Self.actionStatus(error, action)
        }
    }

    /// What Play's refusal of an operator's action tells the caller to do, by Play's HTTP
    /// status and status name: an unknown token or order is NOT_FOUND, a purchase or order not
    /// eligible (already refunded, too old, not active, another expiry) FAILED_PRECONDITION, a
    /// rate limit RESOURCE_EXHAUSTED with the wait Play asked for.
    static func actionStatus(_ error: GooglePlayAPIError, _ action: String) -> (code: StatusCode, message: String) {
        let said =
            "HTTP \(error.httpStatus ?? 0)" + (error.googleStatus.map { " \($0)" } ?? "") + ": \(error.message)"
        let head = "Google Play refused \(action) (\(said))"
        switch (error.code, error.googleStatus) {
        case (.notFound, _), (.gone, _):
            return (
                .notFound,
                "\(head); check the purchase token"
                    + (action == "REFUND_ORDER" ? " and the order id (GPA.…, a renewal's GPA.…..N)" : "")
            )
        case (.rateLimited, _):
            let wait = error.retryAfter.map { "after \($0.components.seconds) s" } ?? "later"
            return (.resourceExhausted, "\(head); Play's quota for this call is used up, try again \(wait)")
        case (.invalidRequest, "FAILED_PRECONDITION"?):
            return (.failedPrecondition, "\(head); " + Self.eligibility(action))
        case (.invalidRequest, _):
            return (.invalidArgument, "\(head); check the request's fields")
        case (.server, _), (.network, _):
            return (.unavailable, "\(head); Play cannot answer now, try again later")
        case (.unauthorized, _):
            return (
                .failedPrecondition,
                "\(head); the service account lacks permission for this app (Play Console, API access)"
            )
        default:
            return (.internal, "\(head)")
        }
    }

    /// What Play requires of a purchase or order for `action`.
    private static func eligibility(_ action: String) -> String {
        switch action {
        case "REFUND_ORDER": "an order already refunded, or older than 3 years, cannot be refunded"
        case "DEFER_RENEWAL":
            "only an active, renewing subscription is deferred, from the expiry Play has now "
                + "(RefreshSubscription reads it again)"
        case "REVOKE": "only a subscription that still gives access can be revoked"
        case "CANCEL": "only an active, renewing subscription can be cancelled"
        default: "the purchase is not eligible"
        }
    }

    /// What Play's answer about a presented purchase tells the caller to check. A subscription's
    /// token is looked up alone (`purchases.subscriptionsv2.get`), a one-time product's with its
    /// product id (`purchases.products.get`).
    static func presentedStatus(_ error: GooglePlayAPIError, _ purchase: GoogleAdapterError.PresentedPurchase)
        -> (code: StatusCode, message: String)
    {
        let package = purchase.packageName.printableASCII(limit: 100)
        let product = purchase.productID.printableASCII(limit: 100)
        let said = "HTTP \(error.httpStatus ?? 0): \(error.message)"
        let check =
            "check purchase_token (the app's Purchase.getPurchaseToken(), whole)"
            + (purchase.oneTime ? " and product_id" : "")
        switch error.code {
        case .gone:
            return (
                .notFound, "Google Play no longer keeps this purchase of \(package) (\(said)): it ended too long ago"
            )
        case .notFound:
            let kind =
                purchase.oneTime
                ? "one-time product \(product)" : "a subscription (\(product) is not in GOOGLE_ONE_TIME_PRODUCTS)"
            return (
                .notFound,
                "Google Play has no purchase of \(package) with this purchase_token as \(kind) (\(said)); \(check)"
            )
        default:
            let with = purchase.oneTime ? " with product_id \(product)" : ""
            return (
                .invalidArgument, "Google Play refuses this purchase_token\(with) for \(package) (\(said)); \(check)"
            )
        }
    }
}
