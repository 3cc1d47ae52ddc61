public import Wire

/// `subctl google …`: an operator's action at Google Play through the verifier, for a support
/// ticket. Each carries the verifier's request as it is sent.
public enum GoogleCommand: Sendable, Equatable {
    /// `google revoke TOKEN --package PKG --refund full|prorated --reason TEXT`.
    case revoke(RevokeGooglePurchaseRequest)
    /// `google refund ORDER_ID --token TOKEN --package PKG [--revoke] --reason TEXT`.
    case refund(RefundGoogleOrderRequest)
    /// `google defer TOKEN --package PKG --product ID (--days N | --until TIME) --reason TEXT`.
    case deferRenewal(DeferGoogleRenewalRequest)
    /// `google cancel TOKEN --package PKG --reason TEXT`.
    case cancel(CancelGoogleSubscriptionRequest)

    /// The full name of the verifier method the command calls.
    public var method: String {
        switch self {
        case .revoke: VerifierRPC.revokeGooglePurchase.name
        case .refund: VerifierRPC.refundGoogleOrder.name
        case .deferRenewal: VerifierRPC.deferGoogleRenewal.name
        case .cancel: VerifierRPC.cancelGoogleSubscription.name
        }
    }
}
