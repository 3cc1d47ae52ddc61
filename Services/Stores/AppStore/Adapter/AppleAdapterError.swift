public import AppStore
import HTTPClient

/// Why the App Store half of the verifier refused a purchase call or could not complete it.
/// Thrown by `AppleAdapter`'s purchase methods beside the ledger's own answers (`RPCError`,
/// passed on as the ledger gave them); the status and message a caller sees for each case are
/// in `VerifierErrors+Wire.swift`.
public enum AppleAdapterError: Error, Sendable {
    /// The request is not one the adapter takes: a field missing, too long, or set with one it
    /// excludes. The text says which.
    case invalidRequest(String)
    /// The purchase is in an App Store environment this verifier has no verifier for.
    case environmentNotServed(AppleEnvironment)
    /// Consumption information for this transaction without the customer's consent: never sent.
    case consentMissing(String)
    /// The transaction carries an `appAccountToken` that is not the calling account's.
    case otherAccountsToken
    /// A signed transaction the caller presented, or one of its history, failed a check (chain,
    /// signature, app, environment, revocation, shape).
    case transactionRefused(AppleVerificationError)
    /// An online check of a signed transaction could not be completed; the data may be fine
    /// (`AppleVerificationError.Code.retryable`).
    case checkIncomplete(AppleVerificationError)
    /// The verified transaction lacks what a ledger record needs (an id, a product).
    case unrecordable(AppleLifecycle.Incomplete)
    /// The App Store Server API does not know the transaction.
    case storeNotFound(AppStoreAPIError)
    /// The transaction id the caller presented is in none of the environments asked (error
    /// 4040010 in each): mistyped, or of another app.
    case transactionNotFound(id: String, environments: [AppleEnvironment])
    /// The App Store Server API says the transaction is in the other environment.
    case storeOtherEnvironment(AppStoreAPIError)
    /// The App Store Server API cannot answer now: rate limited, failing, or out of reach.
    case storeUnavailable(AppStoreAPIError)
    /// The App Store Server API refused the request itself.
    case storeRefusedRequest(AppStoreAPIError)
    /// The App Store Server API answered with signed data that does not verify.
    case storeDataRefused(AppleVerificationError)
    /// The App Store Server API call failed otherwise: credentials refused, an answer it does
    /// not document, a configuration it cannot use, or an error that is not the API's.
    case storeFailed(any Error)
    /// The App Store refused an operator's action (`action`, as its audit event names it):
    /// an id it does not know, a request it does not take, a subscription not eligible, a limit
    /// reached, or too many requests.
    case actionRefused(action: String, AppStoreAPIError)

    /// A signed transaction's refusal: a check that could not be completed, or data that is not
    /// acceptable as it is.
    static func presented(_ error: AppleVerificationError) -> AppleAdapterError {
        error.code == .retryable ? .checkIncomplete(error) : .transactionRefused(error)
    }

    /// What a failed App Store Server API call made for an operator's `action` means: Apple's
    /// refusals (a 4xx answer, or 429 after the client's retries) are `actionRefused`, anything
    /// else as for any call (`store`).
    static func action(_ action: String, _ error: any Error) -> AppleAdapterError {
        guard let error = error as? AppStoreAPIError, let status = error.httpStatus, (400..<500).contains(status),
            status != 401
        else { return store(error) }
        return .actionRefused(action: action, error)
    }

    /// What a failed App Store Server API call, or the check of the signed data it answered,
    /// means for the purchase asked about.
    static func store(_ error: any Error) -> AppleAdapterError {
        if let error = error as? AppleVerificationError { return .storeDataRefused(error) }
        guard let error = error as? AppStoreAPIError else { return .storeFailed(error) }
        switch error.code {
        case .notFound: return .storeNotFound(error)
        case .wrongEnvironment: return .storeOtherEnvironment(error)
        case .rateLimited, .server, .network: return .storeUnavailable(error)
        case .invalidRequest: return .storeRefusedRequest(error)
        default: return .storeFailed(error)
        }
    }
}
