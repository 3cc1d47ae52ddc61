import Model
import RPC
import Wire

/// The App Store support operations, each done in the caller's name (`actor`).
extension VerifierMethods {
    static func registerAppleOperations(on router: RPCRouter, apple: AppleAdapter?) {
        router.unary(VerifierRPC.extendAppleRenewalDate) { (context, request: ExtendAppleRenewalDateRequest) in
            try await required(apple, "the App Store").extendRenewalDate(request, actor: context.actor)
        }
        router.unary(VerifierRPC.setAppleAppAccountToken) { (context, request: SetAppleAppAccountTokenRequest) in
            try await required(apple, "the App Store").setAppAccountToken(request, actor: context.actor)
        }
        router.unary(VerifierRPC.getAppleRefundHistory) { (context, request: GetAppleRefundHistoryRequest) in
            try await required(apple, "the App Store").refundHistory(request, actor: context.actor)
        }
        router.unary(VerifierRPC.massExtendAppleRenewalDate) {
            (context, request: MassExtendAppleRenewalDateRequest) in
            try await required(apple, "the App Store").massExtendRenewalDate(request, actor: context.actor)
        }
        router.unary(VerifierRPC.getAppleMassExtensionStatus) { (_, request: GetAppleMassExtensionStatusRequest) in
            try await required(apple, "the App Store").massExtensionStatus(request)
        }
        router.unary(VerifierRPC.sendAppleConsumptionInformation) {
            (context, request: SendAppleConsumptionInformationRequest) in
            try await required(apple, "the App Store").sendConsumptionInformation(request, actor: context.actor)
        }
    }

}
