import AppStore
import Clients
import Foundation
import HTTPClient
import Model
import RPC
import Testing
import Wire

@testable import VerifierService

@Suite("App Store consumption information", .serialized)
struct AppleConsumptionTests {
    static let key = AppleStoreOperationsTests.key

    static func request(
        consented: Bool = true, delivery: String = "DELIVERED", percentage: Int32? = nil, preference: String = "",
        reason: String = "ticket 12"
    ) -> SendAppleConsumptionInformationRequest {
        SendAppleConsumptionInformationRequest(
            transactionID: "2000000009", customerConsented: consented, deliveryStatus: delivery,
            sampleContentProvided: true, consumptionPercentage: percentage, refundPreference: preference,
            reason: reason)
    }

    @Test("consumption information is sent for the transaction asked and audited with what was sent")
    func sendIsAudited() async throws {
        let harness = try await AppleStoreOperationsTests.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        let response = try await verifier.sendAppleConsumptionInformation(Self.request(preference: "GRANT_PRORATED"))
        #expect(response.subscription?.key == Self.key)
        #expect(harness.api.calls.contains("sendConsumptionInformation 2000000009 DELIVERED GRANT_PRORATED"))
        let action = try #require(try await harness.history(Self.key).first { $0.kind == .storeAction })
        #expect(action.storeSubtype == "SEND_CONSUMPTION_INFORMATION")
        #expect(action.reason == "ticket 12")
        #expect(action.actor?.hasPrefix("address ") == true)
        #expect(
            action.detail
                == "transaction 2000000009: customerConsented true, deliveryStatus DELIVERED, sampleContentProvided "
                + "true, consumptionPercentage none, refundPreference GRANT_PRORATED; Apple accepted it")
        await harness.stop()
    }

    @Test(
        "a request Apple would refuse, or without consent, is refused before the App Store is asked",
        arguments: [
            (
                request(consented: false), StatusCode.failedPrecondition,
                "consumption information for 2000000009 is sent only with the customer's consent"
            ),
            (
                request(delivery: "LOST"), .invalidArgument,
                "delivery_status must be one of Apple's deliveryStatus values"
            ),
            (
                request(preference: "MAYBE"), .invalidArgument,
                "refund_preference must be DECLINE, GRANT_FULL or GRANT_PRORATED"
            ),
            (
                request(percentage: 5000), .invalidArgument,
                "consumption_percentage is not sent for an auto-renewable subscription"
            ),
            (request(reason: ""), .invalidArgument, "reason must be 1 to 512 bytes"),
        ])
    func refusedBeforeApple(request: SendAppleConsumptionInformationRequest, code: StatusCode, says: String)
        async throws
    {
        let harness = try await AppleStoreOperationsTests.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        do {
            _ = try await verifier.sendAppleConsumptionInformation(request)
            Issue.record("the request was taken")
        } catch {
            #expect(error.code == code)
            #expect(error.message.hasPrefix(says), "\(error.message)")
        }
        #expect(!harness.api.calls.contains { $0.hasPrefix("sendConsumptionInformation") })
        await harness.stop()
    }

    @Test("the App Store's refusal is the documented RPC error and records nothing")
    func appleRefusal() async throws {
        let harness = try await AppleStoreOperationsTests.harness()
        harness.api.refuseActions(
            AppStoreAPIError(.invalidRequest, "bad delivery", httpStatus: 400, apiErrorCode: 4_000_036))
        let verifier = try verifierClient(apple: harness.adapter)
        do {
            _ = try await verifier.sendAppleConsumptionInformation(Self.request())
            Issue.record("the answer was taken")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("SEND_CONSUMPTION_INFORMATION") && error.message.contains("error 4000036"))
        }
        #expect(try await harness.ledger.subscription(Self.key) == nil)
        await harness.stop()
    }

    @Test("a consumable's consumption percentage is checked: GRANT_PRORATED needs one above 0")
    func consumableRules() throws {
        #expect(throws: Never.self) {
            try AppleAdapter.consumptionInformation(
                deliveryStatus: "DELIVERED", sampleContentProvided: false, consumptionPercentage: 25_000,
                refundPreference: "GRANT_PRORATED", kind: .consumable)
        }
        #expect(throws: AppleAdapterError.self) {
            try AppleAdapter.consumptionInformation(
                deliveryStatus: "DELIVERED", sampleContentProvided: false, consumptionPercentage: nil,
                refundPreference: "GRANT_PRORATED", kind: .consumable)
        }
        #expect(throws: AppleAdapterError.self) {
            try AppleAdapter.consumptionInformation(
                deliveryStatus: "DELIVERED", sampleContentProvided: false, consumptionPercentage: 100_001,
                refundPreference: nil, kind: .consumable)
        }
    }
}
