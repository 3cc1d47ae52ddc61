import AppStore
import Clients
import Foundation
import HTTPClient
import Model
public import Wire

/// Mass renewal-date extensions at the App Store: Apple extends every eligible subscriber of a
/// product over hours or days, sending RENEWAL_EXTENDED for each subscription it extends,
/// RENEWAL_EXTENSION/FAILURE for each it could not, and RENEWAL_EXTENSION/SUMMARY when done; the
/// notification path records each of those as it arrives, so access follows.
extension AppleAdapter {
    /// Extend Subscription Renewal Dates for All Active Subscribers: asks Apple to extend every
    /// eligible subscriber of `product_id` (optionally only in some storefronts) by `days`, then
    /// records a `MASS_EXTEND_RENEWAL_DATE` store action, read through the refresh path, on each
    /// active subscription of the product the ledger holds in that environment (the ones Apple
    /// will consider). A refusal from the App Store records nothing.
    public func massExtendRenewalDate(_ request: MassExtendAppleRenewalDateRequest, actor: String) async throws
        -> MassExtendAppleRenewalDateResponse
    {
        typealias Limits = MassExtendAppleRenewalDateRequest.Limits
        try Self.checkAction(request.productID, Limits.productID, reason: request.reason, Limits.reason)
        try Self.checkExtension(days: request.days, reasonCode: request.reasonCode)
        guard Limits.storefrontCountryCodesCount.admits(count: request.storefrontCountryCodes.count) else {
            throw AppleAdapterError.invalidRequest(
                "storefront_country_codes must have at most \(Limits.storefrontCountryCodesCount.maximum) codes")
        }
        for code in request.storefrontCountryCodes
        where code.utf8.count != 3 || !code.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) {
            throw AppleAdapterError.invalidRequest(
                "storefront_country_codes must be ISO 3166-1 alpha-3 codes in capitals (such as USA), got "
                    + "\"\(code.printableASCII(limit: 16))\"")
        }
        let requestID = try Self.requestUUID(request.requestID)
        let environment = try servedEnvironment(request.environment)
        let body = AppleMassExtensionRequest(
            extendByDays: Int(request.days), extendReasonCode: Int(request.reasonCode), requestIdentifier: requestID,
            storefrontCountryCodes: request.storefrontCountryCodes.isEmpty ? nil : request.storefrontCountryCodes,
            productId: request.productID)
        let accepted: String
        do {
            accepted = try await api.massExtendRenewalDate(body, environment: environment)
        } catch {
            throw AppleAdapterError.action("MASS_EXTEND_RENEWAL_DATE", error)
        }
        let storefronts =
            request.storefrontCountryCodes.isEmpty
            ? "every storefront" : request.storefrontCountryCodes.joined(separator: ",")
        let action = AppleStoreAction(
            name: "MASS_EXTEND_RENEWAL_DATE", actor: actor, reason: request.reason,
            detail: "every eligible subscriber of \(request.productID) (\(storefronts)) extended by \(request.days) "
                + "days (extendReasonCode \(request.reasonCode), requestIdentifier \(accepted)): Apple accepted "
                + "the request and extends over time")
        var audited: UInt32 = 0
        for key in try await activeSubscriptions(of: request.productID, in: environment) {
            _ = try await refresh(key, action: action)
            audited += 1
        }
        return MassExtendAppleRenewalDateResponse(requestID: accepted, auditedSubscriptions: audited)
    }

    /// Get Status of Subscription Renewal Date Extensions, as Apple answers it.
    public func massExtensionStatus(_ request: GetAppleMassExtensionStatusRequest) async throws
        -> GetAppleMassExtensionStatusResponse
    {
        typealias Limits = GetAppleMassExtensionStatusRequest.Limits
        guard Limits.productID.admits(request.productID), request.productID.allSatisfy(\.isASCII) else {
            throw AppleAdapterError.invalidRequest(Limits.productID.requirement + " (ASCII)")
        }
        let requestID = try Self.requestUUID(request.requestID)
        let environment = try servedEnvironment(request.environment)
        let status: AppleMassExtensionStatus
        do {
            status = try await api.massExtensionStatus(
                productID: request.productID, requestIdentifier: requestID, environment: environment)
        } catch {
            throw AppleAdapterError.action("MASS_EXTENSION_STATUS", error)
        }
        let complete = status.complete ?? false
        return GetAppleMassExtensionStatusResponse(
            requestID: status.requestIdentifier ?? requestID, complete: complete,
            completeTimeMilliseconds: complete ? status.completeDate : nil, succeededCount: status.succeededCount ?? 0,
            failedCount: status.failedCount ?? 0)
    }

    // MARK: Steps

    /// The keys of the active App Store subscriptions (renewing or not) of `productID` in
    /// `environment` the ledger holds, every page.
    private func activeSubscriptions(of productID: String, in environment: AppleEnvironment) async throws
        -> [SubscriptionKey]
    {
        var keys: [SubscriptionKey] = []
        // Active ones, renewing or not.
        for state in [SubscriptionState.active, .cancelled] {
            var pageToken: String?
            repeat {
                let page = try await ledger.listSubscriptions(
                    ListSubscriptionsRequest(store: .apple, state: state, pageSize: 500, pageToken: pageToken))
                keys += page.subscriptions.filter {
                    $0.productID == productID && $0.key.environment == environment.storeEnvironment
                }.map(\.key)
                pageToken = page.nextPageToken
            } while pageToken != nil
        }
        return keys
    }

    /// The environment asked for (the configured one when unspecified), if this verifier serves it.
    private func servedEnvironment(_ requested: StoreEnvironment?) throws(AppleAdapterError) -> AppleEnvironment {
        let environment = requested.map(AppleEnvironment.init) ?? defaultEnvironment
        guard verifiers[environment] != nil else { throw .environmentNotServed(environment) }
        return environment
    }

    /// `request_id` as Apple's `requestIdentifier`: a UUID, lowercase.
    static func requestUUID(_ text: String) throws(AppleAdapterError) -> String {
        guard let id = UUID(uuidString: text) else {
            throw .invalidRequest("request_id must be a UUID (such as \(UUID().uuidString.lowercased()))")
        }
        return id.uuidString.lowercased()
    }

    /// Checks an extension's `days` (Apple's extendByDays) and `reason_code` (extendReasonCode).
    static func checkExtension(days: Int32, reasonCode: Int32) throws(AppleAdapterError) {
        guard (1...90).contains(days) else {
            throw .invalidRequest("days must be 1 to 90 (Apple's extendByDays), got \(days)")
        }
        guard (0...3).contains(reasonCode) else {
            throw .invalidRequest(
                "reason_code must be 0 to 3 (Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, "
                    + "2 other, 3 service issue or outage), got \(reasonCode)")
        }
    }
}
