import AppStore
import Crypto
import Foundation
import HTTP
import HTTPClient
import Observability
import StoreSimKit
import Testing

/// storesim's recorded App Store Server API: which recorded payload it answers with as of an
/// instant (`RecordedAppleData`, on made-up unsigned payloads), and, on the real sandbox data
/// beside the checkout, that the verifier's own client reads its answers and they verify against
/// Apple's real root.
@Suite("Store simulator: the recorded App Store Server API")
struct RecordedAppleAPITests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple")
    static var fixturesAvailable: Bool {
        FileManager.default.fileExists(atPath: fixtures.appendingPathComponent("jws/sandbox-lifecycle-42.jsonl").path)
    }

    /// A compact JWS of `payload` with a placeholder signature (the recorded data is not verified
    /// by the simulator, only served).
    static func unsigned(_ payload: [String: Any]) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8))
        let body = Base64URL.encode([UInt8](try JSONSerialization.data(withJSONObject: payload)))
        return "\(header).\(body).\(Base64URL.encode(Array("signature".utf8)))"
    }

    static func line(_ kind: String, _ payload: [String: Any]) throws -> String {
        let object = ["kind": kind, "jws": try unsigned(payload)]
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func transaction(_ id: String, purchase: Int64, expires: Int64, signed: Int64, revoked: Int64? = nil)
        -> [String: Any]
    {
        var payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": "100", "purchaseDate": purchase, "expiresDate": expires,
            "signedDate": signed, "bundleId": "com.example.app", "subscriptionGroupIdentifier": "g1",
        ]
        payload["revocationDate"] = revoked
        return payload
    }

    /// Two periods of subscription 100, then a refund of the first: a notification, transaction
    /// and renewal info at each of 900, 1900 and 2500.
    static func refundedChain() throws -> RecordedAppleData {
        let first = transaction("100", purchase: 1000, expires: 2000, signed: 900)
        let renewed = transaction("101", purchase: 2000, expires: 3000, signed: 1900)
        let refunded = transaction("100", purchase: 1000, expires: 2000, signed: 2500, revoked: 2400)
        var lines: [String] = []
        for (signed, version) in [(Int64(900), first), (1900, renewed), (2500, refunded)] {
            let data: [String: Any] = [
                "status": 1, "bundleId": "com.example.app", "signedTransactionInfo": try unsigned(version),
            ]
            lines.append(try line("notification", ["notificationType": "X", "signedDate": signed, "data": data]))
            lines.append(try line("transaction", version))
            lines.append(try line("renewalInfo", ["originalTransactionId": "100", "signedDate": signed]))
        }
        return try RecordedAppleData(jsonLines: lines.joined(separator: "\n"))
    }

    @Test("each transaction is answered in its newest version signed at or before the as-of time")
    func newestVersion() throws {
        let data = try Self.refundedChain()
        #expect(data.transaction("100", asOf: 899) == nil)
        #expect(data.transaction("100", asOf: 2499)?.revocationDate == nil)
        #expect(data.transaction("100", asOf: 2500)?.revocationDate == 2400)
        #expect(data.originalTransactionID(of: "101", asOf: 1899) == nil)
        #expect(data.originalTransactionID(of: "101", asOf: 1900) == "100")
        #expect(data.history("100", asOf: 1000).map(\.transactionID) == ["100"])
        let history = data.history("100", asOf: 2500)
        #expect(history.map(\.transactionID) == ["100", "101"] && history[0].revocationDate == 2400)
    }

    @Test("the status names the latest period's transaction, not an older one a refund signed again later")
    func statusAfterRefundOfOlderTransaction() throws {
        let data = try Self.refundedChain()
        #expect(data.latestTransaction("100", asOf: 2500)?.transactionID == "101")
        #expect(data.status("100", asOf: 2500) == 1)
        #expect(data.renewalInfo("100", asOf: 2499)?.signedDate == 1900)
        #expect(data.renewalInfo("100", asOf: 2500)?.signedDate == 2500)
    }

    @Test("without a notification, the status follows the latest transaction: 1 active, 2 expired, 5 revoked")
    func statusWithoutNotifications() throws {
        let active = try Self.line("transaction", Self.transaction("7", purchase: 1000, expires: 2000, signed: 1000))
        let revoked = try Self.line(
            "transaction", Self.transaction("7", purchase: 1000, expires: 2000, signed: 1500, revoked: 1400))
        let data = try RecordedAppleData(jsonLines: active)
        #expect(data.status("100", asOf: 1999) == 1 && data.status("100", asOf: 2000) == 2)
        #expect(try RecordedAppleData(jsonLines: active + "\n" + revoked).status("100", asOf: 1500) == 5)
        #expect(throws: SimError(.badRequest, "recorded line 2 is not an object with a kind and a jws")) {
            try RecordedAppleData(jsonLines: active + "\n{\"kind\":\"receipt\",\"jws\":\"x\"}")
        }
    }

    @Test(
        "on the real sandbox data the verifier's client reads every endpoint and the answers verify against Apple Root CA - G3",
        .enabled(
            if: fixturesAvailable, "../shared/fixtures/apple is absent: the recorded API is not checked on real data"))
    func realData() async throws {
        let data = try RecordedAppleData(
            contentsOfFile: Self.fixtures.appendingPathComponent("jws/sandbox-lifecycle-42.jsonl").path)
        let bundle = "com.loki-project.loki-messenger"
        let key = try PrivateKey.generate(.p256)
        let api = try RecordedAppleAPI(
            data: data,
            credentials: .init(
                keyID: "SIMKEY1234", issuerID: "sim-issuer", publicKey: try PublicKey(pem: key.publicKeyPEM())),
            bundleID: bundle, appAppleID: 1_470_168_868, asOf: 0)
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "storesim", sink: .capturing()))
        api.register(on: server)
        try server.start()
        defer { server.stop() }
        var configuration = AppStoreServerAPIClient.Configuration(
            keyID: "SIMKEY1234", issuerID: "sim-issuer", bundleID: bundle, privateKey: key)
        configuration.sandboxBaseURL = URL(string: "http://127.0.0.1:\(server.port)")!
        configuration.maxAttempts = 1
        let client = try AppStoreServerAPIClient(configuration: configuration)
        let root = try X509Certificate(
            der: [UInt8](try Data(contentsOf: Self.fixtures.appendingPathComponent("certs/AppleRootCA-G3.cer"))))
        let verifier = try AppleSignedDataVerifier(
            anchors: [root], configuration: .init(bundleID: bundle, environment: .sandbox))
        let original = "2000001024993299"

        do {
            _ = try await client.allSubscriptionStatuses(transactionID: original, environment: .sandbox)
            Issue.record("a subscription was answered before anything about it was signed")
        } catch {
            #expect(error.apiErrorCode == 4_040_010 && error.httpStatus == 404)
        }

        // As of the REFUND notification: the refunded transaction is an older one of the chain.
        api.asOf = 1_760_592_122_788
        let statuses = try await client.allSubscriptionStatuses(transactionID: original, environment: .sandbox)
        let last = try #require(statuses.data.first?.lastTransactions.first)
        #expect(last.status == 1 && last.originalTransactionId == original)
        let current = try verifier.verifyTransaction(try #require(last.signedTransactionInfo))
        #expect(current.transactionId == "2000001035288486" && current.revocationDate == nil)
        let renewal = try verifier.verifyRenewalInfo(try #require(last.signedRenewalInfo))
        #expect(renewal.signedDate == 1_760_592_122_788)
        let history = try await client.transactionHistory(transactionID: original, environment: .sandbox)
        let transactions = try history.map { try verifier.verifyTransaction($0) }
        #expect(transactions.count == 6)
        #expect(transactions.map { $0.purchaseDate ?? 0 } == transactions.map { $0.purchaseDate ?? 0 }.sorted())
        #expect(transactions.first { $0.transactionId == "2000001032604840" }?.revocationDate == 1_760_591_999_000)
        #expect(
            try await client.notificationHistory(
                start: Date(timeIntervalSince1970: 1_759_000_000), end: Date(timeIntervalSince1970: 1_761_000_000),
                environment: .sandbox
            ).isEmpty)

        // A moment before the refund was signed, the same transaction was not revoked yet.
        api.asOf = 1_760_592_122_787
        let before = try await client.transactionInfo(transactionID: "2000001032604840", environment: .sandbox)
        #expect(try verifier.verifyTransaction(before).revocationDate == nil)

        var stranger = configuration
        stranger.privateKey = try PrivateKey.generate(.p256)
        do {
            _ = try await AppStoreServerAPIClient(configuration: stranger).transactionInfo(
                transactionID: "2000001032604840", environment: .sandbox)
            Issue.record("a token signed by another key was accepted")
        } catch {
            #expect(error.code == .unauthorized && error.httpStatus == 401)
        }
    }
}
