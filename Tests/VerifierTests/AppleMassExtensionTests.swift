import AppStore
import Clients
import Foundation
import HTTPClient
import Model
import RPC
import Testing
import Wire

@testable import VerifierService

@Suite("App Store mass extension", .serialized)
struct AppleMassExtensionTests {
    static let key = AppleStoreOperationsTests.key
    static let requestID = AppleStoreOperationsTests.requestID

    static func request(storefronts: [String] = [], product: String = "com.example.monthly", reason: String = "outage")
        -> MassExtendAppleRenewalDateRequest
    {
        MassExtendAppleRenewalDateRequest(
            productID: product, storefrontCountryCodes: storefronts, days: 7, reasonCode: 3, requestID: requestID,
            reason: reason)
    }

    @Test("a mass extension is sent to Apple and audited on each active subscription of the product the ledger holds")
    func massExtensionIsAudited() async throws {
        let harness = try await AppleStoreOperationsTests.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        _ = try await verifier.refreshSubscription(RefreshSubscriptionRequest(key: Self.key))
        let response = try await verifier.massExtendAppleRenewalDate(Self.request(storefronts: ["USA", "CAN"]))
        #expect(response.requestID == Self.requestID)
        #expect(response.auditedSubscriptions == 1)
        #expect(harness.api.calls.contains("massExtendRenewalDate com.example.monthly 7"))
        let action = try #require(try await harness.history(Self.key).first { $0.kind == .storeAction })
        #expect(action.storeSubtype == "MASS_EXTEND_RENEWAL_DATE")
        #expect(action.reason == "outage")
        #expect(action.actor?.hasPrefix("address ") == true)
        #expect(action.detail?.contains("(USA,CAN)") == true && action.detail?.contains(Self.requestID) == true)

        // Another product's extension audits nothing here.
        let other = try await verifier.massExtendAppleRenewalDate(Self.request(product: "com.example.yearly"))
        #expect(other.auditedSubscriptions == 0)

        let status = try await verifier.getAppleMassExtensionStatus(
            GetAppleMassExtensionStatusRequest(productID: "com.example.monthly", requestID: Self.requestID))
        #expect(
            status
                == GetAppleMassExtensionStatusResponse(
                    requestID: Self.requestID, complete: true, completeTimeMilliseconds: 1_000_000, succeededCount: 1,
                    failedCount: 0))
        await harness.stop()
    }

    @Test(
        "a mass extension's request is checked before the App Store is asked",
        arguments: [
            (request(storefronts: ["us"]), "storefront_country_codes must be ISO 3166-1 alpha-3 codes in capitals"),
            (request(reason: ""), "reason must be 1 to 512 bytes (why the caller acts, for the audit trail)"),
            (request(product: ""), "product_id must be 1 to 128 ASCII characters"),
        ])
    func massExtensionRefusesBadRequests(request: MassExtendAppleRenewalDateRequest, message: String) async throws {
        let harness = try await AppleStoreOperationsTests.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        do {
            _ = try await verifier.massExtendAppleRenewalDate(request)
            Issue.record("the request was taken")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
        #expect(harness.api.calls.isEmpty)
        await harness.stop()
    }

    @Test(
        "the App Store's refusals of a mass extension and its status are the documented RPC errors",
        arguments: [
            (
                AppStoreAPIError(.invalidRequest, "bad product", httpStatus: 400, apiErrorCode: 4_000_023),
                StatusCode.invalidArgument, "check the request's fields"
            ),
            (
                AppStoreAPIError(.invalidRequest, "bad storefront", httpStatus: 400, apiErrorCode: 4_000_028),
                .invalidArgument, "storefront codes are ISO 3166-1 alpha-3"
            ),
            (
                AppStoreAPIError(.notFound, "unknown", httpStatus: 404, apiErrorCode: 4_040_009),
                .notFound, "no mass extension has that request id for that product"
            ),
        ])
    func refusals(refusal: AppStoreAPIError, code: StatusCode, says: String) async throws {
        let harness = try await AppleStoreOperationsTests.harness()
        harness.api.refuseActions(refusal)
        let verifier = try verifierClient(apple: harness.adapter)
        for call in 0..<2 {
            do {
                if call == 0 {
                    _ = try await verifier.massExtendAppleRenewalDate(Self.request())
                } else {
                    _ = try await verifier.getAppleMassExtensionStatus(
                        GetAppleMassExtensionStatusRequest(productID: "com.example.monthly", requestID: Self.requestID))
                }
                Issue.record("the call succeeded")
            } catch {
                #expect(error.code == code)
                #expect(error.message.contains(says), "\(error.message)")
                #expect(error.message.contains("error \(refusal.apiErrorCode ?? 0)"), "\(error.message)")
            }
        }
        #expect(try await harness.ledger.subscription(Self.key) == nil)
        await harness.stop()
    }
}
