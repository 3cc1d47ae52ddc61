import AppStore
import Model

/// When an App Store notification's own signed data records the subscription's state, and when
/// the App Store Server API is asked first (Get All Subscription Statuses; Get Transaction Info
/// for anything but an auto-renewable subscription): a pure function of the verified
/// notification and the state the ledger holds, so that a table tests it
/// (`docs/stores.md`, "The App Store adapter").
///
/// The notification suffices only when it proves as much as a status call would: a type whose
/// `signedTransactionInfo` is the chain's newest transaction, signed renewal info of the same
/// chain, the chain's `status` (as of the notification's `signedDate`), and nothing newer in the
/// ledger, neither a state signed at or after it nor a newer transaction of the chain. Anything
/// else asks the API, the harsher case.
enum AppleStatusCall {
    /// Why the API is asked.
    enum Reason: String, Sendable, Equatable, CustomStringConvertible {
        /// A one-time product or a non-renewing subscription: no renewal info, no status.
        case notAutoRenewable = "not an auto-renewable subscription"
        /// REFUND, REFUND_DECLINED, REFUND_REVERSED, CONSUMPTION_REQUEST and REVOKE name the
        /// transaction they are about, which may be an older one of the chain; a type this rule
        /// does not list (a new one, a summary's) is not trusted either.
        case typeProvesLess = "the notification type may name an older transaction of the chain"
        case noRenewalInfo = "the notification carries no renewal info"
        case noStatus = "the notification carries no subscription status"
        case noSignedDate = "the notification carries no signedDate"
        /// A transaction that cannot be normalized by itself (no id or product).
        case incomplete = "the transaction cannot be normalized by itself"
        /// Renewal info of another chain than the transaction's.
        case otherChain = "the renewal info is of another chain than the transaction"
        /// The ledger holds a state signed at or after the notification: a late delivery, a
        /// retry, a replay, or two facts of one instant.
        case notNewer = "the ledger holds a state signed at or after the notification"
        /// The ledger knows a transaction of the chain newer than the notification's.
        case newerTransaction = "the ledger knows a newer transaction of the chain"

        var description: String { rawValue }
    }

    /// The types whose `signedTransactionInfo` is the chain's newest transaction when Apple signs
    /// them, with the renewal info and status of that moment: each is a complete snapshot.
    static let selfContainedTypes: Set<AppleNotificationType> = [
        .subscribed, .didRenew, .didChangeRenewalPref, .didChangeRenewalStatus, .didFailToRenew, .expired,
        .gracePeriodExpired, .offerRedeemed, .priceIncrease, .renewalExtended,
    ]

    /// The statuses Apple documents (1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked).
    static let knownStatuses: ClosedRange<Int> = 1...5

    /// Why the API must be asked before recording what `type` says, or nil when the state built
    /// from the notification's own data (`candidate`, from `transaction`, `renewalInfo` and
    /// `status`) is recorded as it is. Needs no ledger read when the answer is already known
    /// (`needsRecordedState`); otherwise `recorded` is the ledger's state of `candidate.key`.
    static func reason(
        type: AppleNotificationType, transaction: AppleTransaction, renewalInfo: AppleRenewalInfo?, status: Int?,
        notificationSignedDate: Int64?, candidate: Subscription, recorded: Subscription?
    ) -> Reason? {
        if let reason = reasonBeforeLedger(
            type: type, transaction: transaction, renewalInfo: renewalInfo, status: status,
            notificationSignedDate: notificationSignedDate)
        {
            return reason
        }
        guard let recorded else { return nil }
        guard let recordedTime = recorded.storeTimeMilliseconds, let time = candidate.storeTimeMilliseconds,
            recordedTime < time
        else { return .notNewer }
        if recorded.latestOrderID != candidate.latestOrderID,
            (recorded.purchaseTimeMilliseconds ?? .max) >= (candidate.purchaseTimeMilliseconds ?? .min)
        {
            return .newerTransaction
        }
        return nil
    }

    /// The part of `reason(…)` the notification alone decides: when it answers, no ledger read
    /// is needed.
    static func reasonBeforeLedger(
        type: AppleNotificationType, transaction: AppleTransaction, renewalInfo: AppleRenewalInfo?, status: Int?,
        notificationSignedDate: Int64?
    ) -> Reason? {
        guard AppleLifecycle.productKind(transaction.type) == .autoRenewable else { return .notAutoRenewable }
        guard selfContainedTypes.contains(type) else { return .typeProvesLess }
        guard let renewalInfo else { return .noRenewalInfo }
        guard let status, knownStatuses.contains(status) else { return .noStatus }
        guard notificationSignedDate != nil else { return .noSignedDate }
        let original = transaction.originalTransactionId ?? transaction.transactionId
        guard renewalInfo.originalTransactionId == original else { return .otherChain }
        return nil
    }
}
