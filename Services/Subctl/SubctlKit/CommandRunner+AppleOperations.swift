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
        case .massExtend(var request, let wait, let every):
            if request.requestID.isEmpty { request.requestID = UUID().uuidString.lowercased() }
            let answer = try await transport.call(
                method, request, as: MassExtendAppleRenewalDateResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                [
                    "mass extension of \(request.productID) by \(request.days) days accepted: request-id "
                        + "\(response.requestID) audited-subscriptions \(response.auditedSubscriptions)"
                ]
            }
            guard wait else { return }
            let status = GetAppleMassExtensionStatusRequest(
                productID: request.productID, requestID: answer.response.requestID, environment: request.environment)
            while true {
                let progress = try await transport.call(
                    AppleOperation.massExtensionStatus(status).method, status,
                    as: GetAppleMassExtensionStatusResponse.self, timeout: options.timeout)
                try write(progress, options) { [OutputText.massExtension($0)] }
                if progress.response.complete { return }
                try? await Task.sleep(for: every)
            }
        case .massExtensionStatus(let request):
            let answer = try await transport.call(
                method, request, as: GetAppleMassExtensionStatusResponse.self, timeout: options.timeout)
            try write(answer, options) { [OutputText.massExtension($0)] }
        case .consumption(let request):
            let answer = try await transport.call(
                method, request, as: SendAppleConsumptionInformationResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                ["consumption information for \(request.transactionID) sent: delivery \(request.deliveryStatus)"]
                    + (response.subscription.map { [OutputText.subscription($0)] } ?? [])
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
    /// `mass-extension 6f1c… complete 2026-01-01T00:00:00Z succeeded 5 failed 2`, or
    /// `… running succeeded 3 failed 0`.
    public static func massExtension(_ status: GetAppleMassExtensionStatusResponse) -> String {
        "mass-extension \(status.requestID) "
            + (status.complete ? "complete \(status.completeTimeMilliseconds.map(time) ?? "-")" : "running")
            + " succeeded \(status.succeededCount) failed \(status.failedCount)"
    }

    /// `refund 2000000009 original 2000000001 product pro.monthly purchased 2026-01-01T00:00:00Z
    /// refunded 2026-01-05T00:00:00Z reason 0 recorded-before yes`.
    public static func refund(_ refund: AppleRefund) -> String {
        "refund \(refund.transactionID) original \(refund.originalTransactionID) product \(refund.productID)"
            + " purchased \(time(refund.purchaseTimeMilliseconds)) refunded \(time(refund.revocationTimeMilliseconds))"
            + " reason \(refund.revocationReason)"
            + " recorded-before \(refund.knownBefore ? "yes" : "no")"
    }
}
