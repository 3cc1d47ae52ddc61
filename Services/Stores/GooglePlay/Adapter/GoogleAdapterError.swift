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
