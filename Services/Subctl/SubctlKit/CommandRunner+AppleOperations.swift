import Foundation
import RPC
public import Wire

extension CommandRunner {
    /// Runs an App Store operation through the verifier and prints its answer: a line per
    /// fact, or with `--json` the answer's compact JSON.
    func run(_ operation: AppleOperation, transport: any ClientTransport, options: CallOptions)
        async throws(SubctlError)
    {
        let method = operation.method
        switch operation {
        case .extend(var request):
            if request.requestID.isEmpty { request.requestID = UUID().uuidString.lowercased() }
            let answer = try await transport.call(
                method, request, as: ExtendAppleRenewalDateResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                [
                    "extended \(request.originalTransactionID) by \(request.days) days: renews "
                        + "\(OutputText.time(response.effectiveTimeMilliseconds)) request-id \(request.requestID)"
                ] + (response.subscription.map { [OutputText.subscription($0)] } ?? [])
            }
        case .setToken(let request):
            let answer = try await transport.call(
                method, request, as: SetAppleAppAccountTokenResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                [
                    "app-account-token \(response.appAccountToken) set on \(request.originalTransactionID) account "
                        + request.accountID + (response.previousAccountID.map { " moved from \($0)" } ?? "")
                ] + (response.subscription.map { [OutputText.subscription($0)] } ?? [])
            }
        case .refunds(let request):
            let answer = try await transport.call(
                method, request, as: GetAppleRefundHistoryResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                response.refunds.isEmpty ? ["no refunds"] : response.refunds.map(OutputText.refund)
            }
        }
    }
}

extension OutputText {
    /// `refund 2000000009 original 2000000001 product pro.monthly purchased 2026-01-01T00:00:00Z
    /// refunded 2026-01-05T00:00:00Z reason 0 recorded-before yes`.
    public static func refund(_ refund: AppleRefund) -> String {
        "refund \(refund.transactionID) original \(refund.originalTransactionID) product \(refund.productID)"
            + " purchased \(time(refund.purchaseTimeMilliseconds)) refunded \(time(refund.revocationTimeMilliseconds))"
            + " reason \(refund.revocationReason)"
            + " recorded-before \(refund.knownBefore ? "yes" : "no")"
    }
}
