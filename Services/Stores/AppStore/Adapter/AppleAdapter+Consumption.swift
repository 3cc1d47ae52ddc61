import AppStore
import Clients
import Foundation
import HTTPClient
import Model
public import Wire

/// Answers to Apple's CONSUMPTION_REQUEST (a customer asked for a refund; Apple allows 12 hours
/// to answer): Send Consumption Information with the `ConsumptionRequest` body of App Store
/// Server API 1.19, only with the customer's consent.
extension AppleAdapter {
    /// Send Consumption Information for `transaction_id`, then records the purchase's state from
    /// the App Store with a `SEND_CONSUMPTION_INFORMATION` store action naming the transaction
    /// and what was sent. Apple's later REFUND or REFUND_DECLINED of the same transaction follows
    /// it in the purchase's trail. FAILED_PRECONDITION without the customer's consent (nothing is
    /// sent); a refusal from the App Store records nothing.
    public func sendConsumptionInformation(_ request: SendAppleConsumptionInformationRequest, actor: String)
        async throws -> SendAppleConsumptionInformationResponse
    {
        typealias Limits = SendAppleConsumptionInformationRequest.Limits
        try Self.checkAction(request.transactionID, Limits.transactionID, reason: request.reason, Limits.reason)
        guard request.customerConsented else { throw AppleAdapterError.consentMissing(request.transactionID) }
        let (transaction, environment, verifier) = try await presentedTransaction(
            signed: nil, id: request.transactionID, environment: request.environment)
        let body = try Self.consumptionInformation(
            deliveryStatus: request.deliveryStatus, sampleContentProvided: request.sampleContentProvided,
            consumptionPercentage: request.consumptionPercentage.map(Int.init),
            refundPreference: request.refundPreference.isEmpty ? nil : request.refundPreference,
            kind: AppleLifecycle.productKind(transaction.type))
        let subscription = try await sendConsumption(
            body, transaction: transaction, id: request.transactionID, environment: environment, verifier: verifier,
            actor: actor, reason: request.reason)
        return SendAppleConsumptionInformationResponse(subscription: subscription)
    }

    /// Sends `body` for the transaction `id` (of `transaction`'s purchase) and records the state
    /// the App Store answers afterwards with the store action.
    func sendConsumption(
        _ body: AppleConsumptionInformation, transaction: AppleTransaction, id: String, environment: AppleEnvironment,
        verifier: AppleSignedDataVerifier, actor: String, reason: String
    ) async throws -> Subscription {
        do {
            try await api.sendConsumptionInformation(transactionID: id, body, environment: environment)
        } catch {
            throw AppleAdapterError.action("SEND_CONSUMPTION_INFORMATION", error)
        }
        let action = AppleStoreAction(
            name: "SEND_CONSUMPTION_INFORMATION", actor: actor, reason: reason,
            detail: "transaction \(id): customerConsented true, deliveryStatus \(body.deliveryStatus), "
                + "sampleContentProvided \(body.sampleContentProvided), consumptionPercentage "
                + (body.consumptionPercentage.map(String.init) ?? "none") + ", refundPreference "
                + (body.refundPreference ?? "none") + "; Apple accepted it")
        return try await recordAfterAction(transaction, environment: environment, verifier: verifier, action: action)
    }

    /// The `ConsumptionRequest` body for a purchase of `kind`, checked as Apple checks it:
    /// `deliveryStatus` and `refundPreference` among Apple's values, a consumption percentage of
    /// 0 to 100000 milliunits and none for an auto-renewable subscription (Apple computes it),
    /// and GRANT_PRORATED of another product with a percentage above 0.
    static func consumptionInformation(
        deliveryStatus: String, sampleContentProvided: Bool, consumptionPercentage: Int?, refundPreference: String?,
        kind: ProductKind?
    ) throws(AppleAdapterError) -> AppleConsumptionInformation {
        guard AppleConsumptionInformation.deliveryStatuses.contains(deliveryStatus) else {
            throw .invalidRequest(
                "delivery_status must be one of Apple's deliveryStatus values ("
                    + AppleConsumptionInformation.deliveryStatuses.sorted().joined(separator: ", ") + ")")
        }
        if let refundPreference, !AppleConsumptionInformation.refundPreferences.contains(refundPreference) {
            throw .invalidRequest("refund_preference must be DECLINE, GRANT_FULL or GRANT_PRORATED, or empty")
        }
        if let consumptionPercentage {
            guard (0...100_000).contains(consumptionPercentage) else {
                throw .invalidRequest("consumption_percentage is in milliunits, 0 to 100000")
            }
            guard kind != .autoRenewable else {
                throw .invalidRequest(
                    "consumption_percentage is not sent for an auto-renewable subscription (Apple computes it)")
            }
        }
        if refundPreference == "GRANT_PRORATED", kind != .autoRenewable, (consumptionPercentage ?? 0) <= 0 {
            throw .invalidRequest("GRANT_PRORATED needs a consumption_percentage above 0 for this product")
        }
        return AppleConsumptionInformation(
            customerConsented: true, consumptionPercentage: consumptionPercentage, deliveryStatus: deliveryStatus,
            refundPreference: refundPreference, sampleContentProvided: sampleContentProvided)
    }
}
