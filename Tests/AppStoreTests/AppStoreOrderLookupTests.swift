import AppStore
import Foundation
import HTTP
import HTTPClient
import Testing

/// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): asked in production only, `status` 0
/// with its signed transactions, `status` 1 as no transactions.
@Suite("App Store Look Up Order ID")
struct AppStoreOrderLookupTests {
    static let path = "/inApps/v1/lookup/MK5TTTVWJH"

    @Test("a valid order answers its signed transactions, asked of the production server")
    func validOrder() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.path, .json(#"{"status":0,"signedTransactions":["a.one.sig","a.two.sig"]}"#))
        let signed = try await harness.client().lookUpOrderID("MK5TTTVWJH")
        #expect(signed == ["a.one.sig", "a.two.sig"])
        #expect(harness.production.requests.map(\.method) == ["GET"])
        #expect(harness.sandbox.requests.isEmpty)
    }

    @Test("status 1 (an order id that is not this app's) is no transactions")
    func invalidOrder() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", Self.path, .json(#"{"status":1}"#))
        #expect(try await harness.client().lookUpOrderID("MK5TTTVWJH").isEmpty)
    }

    @Test("a status Apple does not document is .invalidResponse")
    func unknownStatus() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", Self.path, .json(#"{"status":2}"#))
        let error = await #expect(throws: AppStoreAPIError.self) {
            try await harness.client().lookUpOrderID("MK5TTTVWJH")
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message == "GET \(Self.path) answered status 2, not 0 or 1")
    }
}
