import Foundation
import HTTP
import HTTPClient
import Testing

@testable import GooglePlay

/// The calls that change a purchase at Play, against the fake Play Developer API: exact paths,
/// query and bodies, Play's answers decoded, and a refusal kept with Play's status name and
/// `Retry-After`, never tried again.
@Suite("Google Play store action calls")
struct GooglePlayStoreActionClientTests {
    static let token = GooglePlayDeveloperAPIClientTests.token
    static let package = GooglePlayHarness.packageName

    static func json(_ body: [UInt8]) -> [String: [String: String]]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: [String: String]]
    }

    @Test("subscriptionsv2.revoke posts the refund type as the revocationContext")
    func revoke() async throws {
        let harness = try GooglePlayHarness()
        let path = GooglePlayHarness.path("/purchases/subscriptionsv2/tokens/\(Self.token):revoke")
        harness.api.answer("POST", path, .json("{}"))
        let client = try harness.client()

        try await client.revokeSubscription(packageName: Self.package, token: Self.token, refund: .full)
        try await client.revokeSubscription(packageName: Self.package, token: Self.token, refund: .prorated)

        let requests = harness.api.requests
        #expect(requests.map(\.path) == [path, path])
        #expect(String(decoding: requests[0].body, as: UTF8.self) == #"{"revocationContext":{"fullRefund":{}}}"#)
        #expect(String(decoding: requests[1].body, as: UTF8.self) == #"{"revocationContext":{"proratedRefund":{}}}"#)
        #expect(requests[0].headers["content-type"] == "application/json")
    }

    @Test("orders.refund posts no body with revoke in the query, a renewal's order id in the path as it is")
    func refund() async throws {
        let harness = try GooglePlayHarness()
        let path = GooglePlayHarness.path("/orders/GPA.3354-3745-5570-25336..1:refund")
        harness.api.answer("POST", path, HTTPResponse(status: 200))
        let client = try harness.client()

        try await client.refundOrder(packageName: Self.package, orderID: "GPA.3354-3745-5570-25336..1", revoke: true)
        try await client.refundOrder(packageName: Self.package, orderID: "GPA.3354-3745-5570-25336..1", revoke: false)

        let requests = harness.api.requests
        #expect(requests.map(\.path) == [path, path])
        #expect(requests.map { $0.query["revoke"] } == ["true", "false"])
        #expect(requests.map(\.body.isEmpty) == [true, true])
    }

    @Test("subscriptions.defer sends both times as int64 strings and returns Play's newExpiryTimeMillis")
    func deferral() async throws {
        let harness = try GooglePlayHarness()
        let path = GooglePlayHarness.path("/purchases/subscriptions/premium_monthly/tokens/\(Self.token):defer")
        harness.api.answer("POST", path, .json(#"{"newExpiryTimeMillis":"1760000000000"}"#))
        let client = try harness.client()

        let expiry = try await client.deferSubscription(
            packageName: Self.package, subscriptionID: "premium_monthly", token: Self.token,
            expectedExpiry: 1_759_000_000_000, desiredExpiry: 1_760_000_000_000)

        #expect(expiry == 1_760_000_000_000)
        #expect(
            Self.json(try #require(harness.api.requests.first).body)
                == [
                    "deferralInfo": [
                        "expectedExpiryTimeMillis": "1759000000000", "desiredExpiryTimeMillis": "1760000000000",
                    ]
                ])
    }

    @Test("subscriptionsv2.cancel asks USER_REQUESTED_STOP_RENEWALS")
    func cancel() async throws {
        let harness = try GooglePlayHarness()
        let path = GooglePlayHarness.path("/purchases/subscriptionsv2/tokens/\(Self.token):cancel")
        harness.api.answer("POST", path, .json("{}"))
        let client = try harness.client()

        try await client.cancelSubscription(packageName: Self.package, token: Self.token)

        #expect(
            Self.json(try #require(harness.api.requests.first).body)
                == ["cancellationContext": ["cancellationType": "USER_REQUESTED_STOP_RENEWALS"]])
    }

    @Test("a refusal keeps Play's status name; a 429 keeps its Retry-After and is not tried again")
    func refusals() async throws {
        let harness = try GooglePlayHarness()
        let path = GooglePlayHarness.path("/orders/GPA.1:refund")
        harness.api.answer(
            "POST", path, FakePlayDeveloperAPI.error(400, "The order has already been refunded.", "FAILED_PRECONDITION")
        )
        let client = try harness.client()

        let refused = await #expect(throws: GooglePlayAPIError.self) {
            try await client.refundOrder(packageName: Self.package, orderID: "GPA.1", revoke: false)
        }
        #expect(refused?.code == .invalidRequest && refused?.httpStatus == 400)
        #expect(refused?.googleStatus == "FAILED_PRECONDITION")
        #expect(refused?.message == "orders.refund of GPA.1 for \(Self.package): The order has already been refunded.")

        var limited = FakePlayDeveloperAPI.error(429, "Quota exceeded.", "RESOURCE_EXHAUSTED")
        limited.headers.append(("Retry-After", "7"))
        let cancelPath = GooglePlayHarness.path("/purchases/subscriptionsv2/tokens/\(Self.token):cancel")
        harness.api.answer("POST", cancelPath, limited)
        let error = await #expect(throws: GooglePlayAPIError.self) {
            try await client.cancelSubscription(packageName: Self.package, token: Self.token)
        }
        #expect(error?.code == .rateLimited && error?.retryAfter == .seconds(7))
        #expect(error?.googleStatus == "RESOURCE_EXHAUSTED")
        #expect(harness.api.requests.filter { $0.path == cancelPath }.count == 1)
    }
}
