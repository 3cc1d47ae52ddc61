public import Wire

/// `subctl apple extend|extend-status|set-token|refunds|consumption …`: an operator's action at the App Store, made
/// through the verifier (which records it in the subscription's audit trail with the caller and
/// the reason given).
public enum AppleOperation: Sendable, Equatable {
    /// `apple extend`: Verifier/ExtendAppleRenewalDate. An empty `request_id` is filled in with
    /// a new UUID when the command runs (and printed, for a retry).
    case extend(ExtendAppleRenewalDateRequest)
    /// `apple extend --all`: Verifier/MassExtendAppleRenewalDate (an empty `request_id` filled in
    /// as for `extend`), then, when `wait`, Verifier/GetAppleMassExtensionStatus every `every`
    /// until Apple has finished.
    case massExtend(MassExtendAppleRenewalDateRequest, wait: Bool, every: Duration)
    /// `apple extend-status`: Verifier/GetAppleMassExtensionStatus.
    case massExtensionStatus(GetAppleMassExtensionStatusRequest)
    /// `apple consumption`: Verifier/SendAppleConsumptionInformation.
    case consumption(SendAppleConsumptionInformationRequest)
    /// `apple set-token`: Verifier/SetAppleAppAccountToken.
    case setToken(SetAppleAppAccountTokenRequest)
    /// `apple refunds`: Verifier/GetAppleRefundHistory.
    case refunds(GetAppleRefundHistoryRequest)

    /// The full name of the method the operation calls.
    public var method: String {
        let name =
            switch self {
            case .extend: "ExtendAppleRenewalDate"
            case .massExtend: "MassExtendAppleRenewalDate"
            case .massExtensionStatus: "GetAppleMassExtensionStatus"
            case .consumption: "SendAppleConsumptionInformation"
            case .setToken: "SetAppleAppAccountToken"
            case .refunds: "GetAppleRefundHistory"
            }
        return "subscriptions.verifier.v1.Verifier/\(name)"
    }
}
