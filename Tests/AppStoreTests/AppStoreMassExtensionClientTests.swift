import AppStore
import Foundation
import HTTP
import HTTPClient
import TestSupport
import Testing

/// The client's two mass-extension calls against Apple's documented JSON.
@Suite("App Store Server API client: mass extension")
struct AppStoreMassExtensionClientTests {
    static let requestID = "efb27071-45a4-4aca-9854-2a1e9146f265"

    @Test("Extend for All Active Subscribers posts the documented body and answers the requestIdentifier")
    func massExtendPostsTheBody() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "POST", "/inApps/v1/subscriptions/extend/mass", .json(#"{"requestIdentifier":"\#(Self.requestID)"}"#))
        let client = try harness.client()

        let accepted = try await client.massExtendRenewalDate(
            AppleMassExtensionRequest(
                extendByDays: 45, extendReasonCode: 1, requestIdentifier: Self.requestID,
                storefrontCountryCodes: ["USA", "MEX"], productId: "com.example.product"),
            environment: .production)

        #expect(accepted == Self.requestID)
        let request = try #require(harness.production.requests.first)
        #expect(request.method == "POST" && request.headers["content-type"] == "application/json")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(body["extendByDays"] as? Int == 45 && body["extendReasonCode"] as? Int == 1)
        #expect(body["requestIdentifier"] as? String == Self.requestID)
        #expect(body["storefrontCountryCodes"] as? [String] == ["USA", "MEX"])
        #expect(body["productId"] as? String == "com.example.product")
    }

    @Test("every storefront leaves storefrontCountryCodes out (Apple refuses an empty list)")
    func everyStorefrontOmitsTheList() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "POST", "/inApps/v1/subscriptions/extend/mass", .json(#"{"requestIdentifier":"\#(Self.requestID)"}"#))
        let client = try harness.client()
        _ = try await client.massExtendRenewalDate(
            AppleMassExtensionRequest(
                extendByDays: 1, extendReasonCode: 0, requestIdentifier: Self.requestID, storefrontCountryCodes: nil,
                productId: "com.example.product"),
            environment: .production)
        let request = try #require(harness.production.requests.first)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(body["storefrontCountryCodes"] == nil)
    }

    @Test("Get Status decodes complete, completeDate and the counts from the product's and request's path")
    func statusDecodes() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", "/inApps/v1/subscriptions/extend/mass/com.example.product/\(Self.requestID)",
            .json(
                #"{"requestIdentifier":"\#(Self.requestID)","complete":true,"completeDate":1698148900000,"#
                    + #""succeededCount":30,"failedCount":2}"#))
        let client = try harness.client()

        let status = try await client.massExtensionStatus(
            productID: "com.example.product", requestIdentifier: Self.requestID, environment: .production)

        #expect(
            status
                == AppleMassExtensionStatus(
                    requestIdentifier: Self.requestID, complete: true, completeDate: 1_698_148_900_000,
                    succeededCount: 30, failedCount: 2))
    }

    @Test("an unknown request is Apple's 4040009, not retried")
    func unknownRequestIsNotFound() async throws {
        let harness = try AppStoreHarness()
        let path = "/inApps/v1/subscriptions/extend/mass/com.example.product/\(Self.requestID)"
        harness.production.answer(
            "GET", path, .json(#"{"errorCode":4040009,"errorMessage":"Status request not found."}"#, status: 404))
        let client = try harness.client()
        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.massExtensionStatus(
                productID: "com.example.product", requestIdentifier: Self.requestID, environment: .production)
        }
        #expect(error?.httpStatus == 404 && error?.apiErrorCode == 4_040_009)
        #expect(harness.production.requests.count == 1)
    }
}

/// The client's Send Consumption Information against Apple's documented JSON.
@Suite("App Store Server API client: consumption information")
struct AppStoreConsumptionClientTests {
    @Test("Send Consumption Information puts the 1.19 ConsumptionRequest on the v2 path; 202 is success")
    func putsTheBody() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "PUT", "/inApps/v2/transactions/consumption/2000000000000009", HTTPResponse(status: 202))
        let client = try harness.client()
        try await client.sendConsumptionInformation(
            transactionID: "2000000000000009",
            AppleConsumptionInformation(
                customerConsented: true, consumptionPercentage: 25_000, deliveryStatus: "DELIVERED",
                refundPreference: "GRANT_PRORATED", sampleContentProvided: false),
            environment: .production)
        let request = try #require(harness.production.requests.first)
        #expect(request.method == "PUT" && request.headers["content-type"] == "application/json")
        #expect(
            String(decoding: request.body, as: UTF8.self)
                == #"{"consumptionPercentage":25000,"customerConsented":true,"deliveryStatus":"DELIVERED","#
                + #""refundPreference":"GRANT_PRORATED","sampleContentProvided":false}"#)
    }

    @Test("an auto-renewable subscription's answer leaves consumptionPercentage and an absent preference out")
    func leavesOptionalFieldsOut() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "PUT", "/inApps/v2/transactions/consumption/2000000000000009", HTTPResponse(status: 202))
        let client = try harness.client()
        try await client.sendConsumptionInformation(
            transactionID: "2000000000000009",
            AppleConsumptionInformation(
                customerConsented: true, consumptionPercentage: nil, deliveryStatus: "UNDELIVERED_OTHER",
                refundPreference: nil, sampleContentProvided: true),
            environment: .production)
        let request = try #require(harness.production.requests.first)
        #expect(
            String(decoding: request.body, as: UTF8.self)
                == #"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":true}"#)
    }
}
