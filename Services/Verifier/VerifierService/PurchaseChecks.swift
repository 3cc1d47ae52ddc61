import Model
import Wire

/// Checks and comparisons every store adapter applies to what an app backend presents.
enum PurchaseChecks {
    static func account(_ accountID: String) throws(PurchaseRequestError) {
        guard !accountID.isEmpty, accountID.utf8.count <= 256 else {
            throw .invalidRequest("account_id must be 1 to 256 bytes")
        }
    }

    static func idempotencyKey(_ key: String) throws(PurchaseRequestError) {
        guard !key.isEmpty, key.utf8.count <= 100 else {
            throw .invalidRequest("idempotency_key must be 1 to 100 bytes")
        }
    }

    /// Throws when the ledger did not give the purchase to the caller's account (its transfer
    /// policy refused moving it, or kept it with the first account).
    static func linked(_ link: LinkAccountResponse) throws(PurchaseRequestError) {
        switch link.outcome {
        case .refused?:
            throw .transferRefused
        case .kept?:
            throw .keptByFirstAccount
        default: return
        }
    }

    /// Whether a refresh changed what access depends on.
    static func differs(_ before: Subscription, _ after: Subscription) -> Bool {
        before.state != after.state || before.expiresTimeMilliseconds != after.expiresTimeMilliseconds
            || before.productID != after.productID || before.autoRenew != after.autoRenew
            || before.revokedTimeMilliseconds != after.revokedTimeMilliseconds
            || before.graceExpiresTimeMilliseconds != after.graceExpiresTimeMilliseconds
            || before.acknowledged != after.acknowledged
    }
}
