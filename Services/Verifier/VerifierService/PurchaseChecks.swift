import Crypto
import Model
import Wire

/// Checks and comparisons every store adapter applies to what an app backend presents.
enum PurchaseChecks {
    /// Throws when `value` is not within `limit` (a request field's bound as `proto/` states
    /// it), naming the field and the bound.
    static func check(_ value: String, _ limit: FieldLimit) throws(PurchaseRequestError) {
        guard limit.admits(value) else { throw .invalidRequest(limit.requirement) }
    }

    /// The idempotency key of one step of a restore (`part` names the step): a digest of the
    /// caller's key and the step, so that any key the API allows gives a key the ledger takes,
    /// the same key gives the same step's key again, and different keys or steps never share
    /// one.
    static func restoreStepKey(_ key: String, _ part: String) -> String {
        "restore-" + Digest.sha256Hex(Array("\(key)#\(part)".utf8)).prefix(48)
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

    /// How a restore's link of `key` ended, as the restore answers it.
    static func restored(_ key: SubscriptionKey, _ link: LinkAccountResponse) -> RestoredPurchase {
        let outcome: RestoreLink? =
            switch link.outcome {
            case .linked?: .linked
            case .alreadyLinked?: .alreadyLinked
            case .transferred?: .transferred
            case .kept?: .kept
            case .refused?: .refused
            default: nil
            }
        return RestoredPurchase(key: key, link: outcome, otherAccountID: link.previousAccountID)
    }

    /// The `storeAction` subtype of a refresh an operator asked for (`RefreshSubscription` with a
    /// reason).
    static let refreshAction = "REFRESH"

    /// What an operator's refresh found, for its audit event: whether the store's answer
    /// (`after`) changed the state the ledger held (`before`; nil: none), as `differs` judges.
    static func refreshDetail(before: Subscription?, after: Subscription) -> String {
        let state = { (subscription: Subscription) in subscription.state.map { "\($0)" } ?? "unspecified" }
        guard let before else {
            return "the store's answer is the first state the ledger holds (\(state(after)))"
        }
        guard differs(before, after) else {
            return "the store's answer left the recorded state unchanged (\(state(after)))"
        }
        return "the store's answer changed the recorded state (\(state(before)) → \(state(after)))"
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
