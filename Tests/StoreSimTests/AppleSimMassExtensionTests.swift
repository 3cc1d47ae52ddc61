import AppStore
import Foundation
import HTTP
import StoreSimKit
import Testing

extension AppleSimStrictnessTests {
    @Test("a mass extension over HTTP runs over several status reads, then sends its SUMMARY; refusals by code")
    func massExtensionEndpoint() async throws {
        let store = Self.store()
        let served = try Served(store: store, historyPageSize: 20)
        defer { served.server.stop() }
        let ids = try (0..<3).map { _ in try store.buy(productID: Self.monthly.id) }
        let shared = try store.buy(productID: Self.monthly.id, familyShared: true)
        store.advance(by: Self.day)
        _ = store.takeOutbox()
        let body: [String: Any] = [
            "extendByDays": 5, "extendReasonCode": 3, "requestIdentifier": "mass-1", "productId": Self.monthly.id,
            "storefrontCountryCodes": ["USA", "CAN"],
        ]
        let (status, answer) = try await served.call("POST", "/inApps/v1/subscriptions/extend/mass", body: body)
        #expect(status == 200 && answer as NSDictionary == ["requestIdentifier": "mass-1"])
        #expect(store.takeOutbox().isEmpty)

        let path = "/inApps/v1/subscriptions/extend/mass/\(Self.monthly.id)/mass-1"
        var reads: [[String: Any]] = []
        repeat {
            let (status, read) = try await served.call("GET", path)
            #expect(status == 200)
            reads.append(read)
        } while reads.last?["complete"] as? Bool == false && reads.count < 10
        #expect(reads.count == 3)
        #expect(reads[0]["complete"] as? Bool == false && reads[0]["completeDate"] == nil)
        let done = try #require(reads.last)
        #expect((done["succeededCount"] as? NSNumber)?.intValue == 3)
        #expect((done["failedCount"] as? NSNumber)?.intValue == 1)
        #expect((done["completeDate"] as? NSNumber)?.int64Value == store.clock.now)

        let sent = store.takeOutbox()
        #expect(
            sent.map { "\($0.type)/\($0.subtype ?? "")" }.sorted() == [
                "RENEWAL_EXTENDED/", "RENEWAL_EXTENDED/", "RENEWAL_EXTENDED/", "RENEWAL_EXTENSION/FAILURE",
                "RENEWAL_EXTENSION/SUMMARY",
            ])
        #expect(Set(sent.filter { $0.type == "RENEWAL_EXTENDED" }.map(\.originalTransactionID)) == Set(ids))
        #expect(sent.first { $0.subtype == "FAILURE" }?.originalTransactionID == shared)
        let last = try #require(sent.last)
        let summary = try #require(try Self.verifier.verifyNotification(last.signedPayload).summary)
        #expect(summary.requestIdentifier == "mass-1" && summary.productId == Self.monthly.id)
        #expect(summary.storefrontCountryCodes == ["USA", "CAN"])
        #expect(summary.succeededCount == 3 && summary.failedCount == 1)

        func errorCode(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> (Int, Int?) {
            let (status, answer) = try await served.call(method, path, body: body)
            return (status, (answer["errorCode"] as? NSNumber)?.intValue)
        }
        let mass = "/inApps/v1/subscriptions/extend/mass"
        var bad = body
        bad["extendByDays"] = 91
        #expect(try await errorCode("POST", mass, bad) == (400, 4_000_009))
        bad = body
        bad["productId"] = "com.example.nothing"
        #expect(try await errorCode("POST", mass, bad) == (400, 4_000_023))
        bad = body
        bad["storefrontCountryCodes"] = [] as [String]
        #expect(try await errorCode("POST", mass, bad) == (400, 4_000_027))
        bad["storefrontCountryCodes"] = ["US"]
        #expect(try await errorCode("POST", mass, bad) == (400, 4_000_028))
        #expect(try await errorCode("GET", "\(mass)/\(Self.monthly.id)/mass-2") == (404, 4_040_009))
    }
}
