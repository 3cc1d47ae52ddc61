import AppStore
import Foundation
import HTTP
import StoreSimKit
import Testing

extension AppleSimStrictnessTests {
    @Test("Send Consumption Information over HTTP: 202 and kept; Apple's error codes for what it refuses")
    func consumptionEndpoint() async throws {
        let store = Self.store()
        let served = try Served(store: store, historyPageSize: 20)
        defer { served.server.stop() }
        let id = try store.buy(productID: Self.monthly.id)
        let path = "/inApps/v2/transactions/consumption/\(id)"
        let body: [String: Any] = [
            "customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false,
            "refundPreference": "DECLINE",
        ]
        let (status, _) = try await served.call("PUT", path, body: body)
        #expect(status == 202)
        #expect(
            store.consumptionAnswers(of: id) == [
                ["deliveryStatus": "DELIVERED", "sampleContentProvided": "false", "refundPreference": "DECLINE"]
            ])

        func errorCode(_ path: String, _ body: [String: Any]) async throws -> (Int, Int?) {
            let (status, answer) = try await served.call("PUT", path, body: body)
            return (status, (answer["errorCode"] as? NSNumber)?.intValue)
        }
        var bad = body
        bad["customerConsented"] = false
        #expect(try await errorCode(path, bad) == (400, 4_000_035))
        bad = body
        bad["deliveryStatus"] = "LOST"
        #expect(try await errorCode(path, bad) == (400, 4_000_036))
        bad = body
        bad["sampleContentProvided"] = nil
        #expect(try await errorCode(path, bad) == (400, 4_000_041))
        #expect(try await errorCode("/inApps/v2/transactions/consumption/2000000000000999", body) == (404, 4_040_010))
        #expect(store.consumptionAnswers(of: id).count == 1)
    }
}
