import Model
import Wire

/// Checks and comparisons every store adapter applies to what an app backend presents.
enum PurchaseChecks {
    static func account(_ accountID: String) throws {
        guard !accountID.isEmpty, accountID.utf8.count <= 256 else {
            throw RPCError(.invalidArgument, "account_id must be 1 to 256 bytes")
        }
    }

    static func idempotencyKey(_ key: String) throws {
        guard !key.isEmpty, key.utf8.count <= 100 else {
            throw RPCError(.invalidArgument, "idempotency_key must be 1 to 100 bytes")
        }
    }

    /// Throws PERMISSION_DENIED when the ledger did not give the purchase to the caller's account.
    static func linked(_ link: LinkAccountResponse) throws {
        switch link.outcome {
        case .refused?:
            throw RPCError(
                .permissionDenied, "the purchase belongs to another account and the transfer policy refuses moving it")
        case .kept?:
            throw RPCError(
                .permissionDenied, "the purchase stays with the account that claimed it first (transfer policy keep)")
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
