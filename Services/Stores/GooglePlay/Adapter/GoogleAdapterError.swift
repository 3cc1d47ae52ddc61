public import GooglePlay
import HTTPClient
public import Model

/// Why the Google Play half of the verifier refused a purchase call or could not complete it.
/// Thrown by `GoogleAdapter`'s purchase methods beside the ledger's own answers (`RPCError`,
/// passed on as the ledger gave them); the status and message a caller sees for each case are
/// in `VerifierErrors+Wire.swift`.
public enum GoogleAdapterError: Error, Sendable {
    /// The request is not one the adapter takes: a field empty or too long. The text says which.
    case invalidRequest(String)
    /// The request names a package this verifier does not serve.
    case packageNotServed(String)
    /// The purchase carries an `obfuscatedExternalAccountId` that does not name the calling account.
    case otherAccount
    /// The purchase token is not for the product the request names.
    case wrongProduct(String)
    /// A refresh of a purchase the ledger has never recorded (it is verified first).
    case notInLedger(SubscriptionKey)
    /// Google's answer lacks what a ledger record needs (a line item, a product, a time).
    case unrecordable(GooglePlayLifecycle.Incomplete)
    /// The Play Developer API does not know the purchase token, or no longer keeps it (410).
    case storeNotFound(GooglePlayAPIError)
    /// The Play Developer API cannot answer now: rate limited, failing, or out of reach.
    case storeUnavailable(GooglePlayAPIError)
    /// The Play Developer API refused the request itself.
    case storeRefusedRequest(GooglePlayAPIError)
    /// The Play Developer API call failed otherwise: credentials refused, an answer it does not
    /// document, a configuration it cannot use.
    case storeFailed(GooglePlayAPIError)
    /// The Play Developer API does not know the purchase a caller presented (404), no longer
    /// keeps it (410), or refuses its token or product as malformed (400): said in the terms of
    /// the request, with what to check.
    case presentedPurchase(GooglePlayAPIError, PresentedPurchase)
    /// Play refused an operator's action, or could not take it now: `action` names it as the
    /// audit event would (`REVOKE`, `REFUND_ORDER`, `DEFER_RENEWAL`, `CANCEL`). Nothing was
    /// recorded.
    case actionRefused(GooglePlayAPIError, action: String)

    /// What a caller presented, as the Play Developer API was asked about it.
    public struct PresentedPurchase: Sendable {
        public var packageName: String
        public var productID: String
        /// Looked up as a one-time product (`GOOGLE_ONE_TIME_PRODUCTS` names it), else as a
        /// subscription.
        public var oneTime: Bool

        public init(packageName: String, productID: String, oneTime: Bool) {
            self.packageName = packageName
            self.productID = productID
            self.oneTime = oneTime
        }
    }

    /// `error` of the verification of `purchase`: the Play Developer API's answer about the
    /// token itself in the request's terms; anything else as it is.
    static func presented(_ error: any Error, _ purchase: PresentedPurchase) -> any Error {
        switch error as? GoogleAdapterError {
        // A refusal by the client's own checks (no HTTP status) is not Google's answer.
        case .storeNotFound(let answer)? where answer.httpStatus != nil,
            .storeRefusedRequest(let answer)? where answer.httpStatus != nil:
            return GoogleAdapterError.presentedPurchase(answer, purchase)
        default: return error
        }
    }

    /// What a failed Play Developer API call means for the purchase asked about.
    static func store(_ error: GooglePlayAPIError) -> GoogleAdapterError {
        switch error.code {
        case .notFound, .gone: .storeNotFound(error)
        case .rateLimited, .server, .network: .storeUnavailable(error)
        case .invalidRequest: .storeRefusedRequest(error)
        default: .storeFailed(error)
        }
    }
}
