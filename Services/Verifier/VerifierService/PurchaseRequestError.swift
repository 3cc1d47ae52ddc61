/// Why the verifier refused a purchase call before either store's adapter took it up, or after
/// the ledger decided who owns the purchase: the checks every store shares (`PurchaseChecks`)
/// and the methods' own (`VerifierMethods`). The status and message a caller sees for each case
/// are in `VerifierErrors+Wire.swift`.
public enum PurchaseRequestError: Error, Sendable, Equatable {
    /// The request is not one the verifier takes: a field missing, out of bounds, or naming what
    /// cannot be done. The text says which.
    case invalidRequest(String)
    /// The purchase belongs to another account and the ledger's transfer policy refuses moving it.
    case transferRefused
    /// The purchase stays with the account that claimed it first (transfer policy `keep`).
    case keptByFirstAccount
    /// The call needs a store this verifier is not configured for; the text names the store.
    case storeNotConfigured(String)
}
