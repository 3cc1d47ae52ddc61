import AppStore
import Clients
import Config
import Crypto
import Foundation
import HTTP
import Model
import Observability
import RPC
import Sockets
import Synchronization
import TestSupport
import VerifierService
import Wire

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ledger in this process on a temporary SQLite file, a Sandbox Apple adapter trusting a
/// generated chain over a fake App Store, and the adapter's routes on a real HTTP server.
final class AppleAdapterHarness: Sendable {
    static let bundleID = "com.example.app"

    let directory: URL
    let ledger: LedgerClient
    let chain: AppleSigningChain
    let api: FakeAppStoreAPI
    let adapter: AppleAdapter
    let http: HTTPServer
    let clock: Clock
    let metrics = MetricsRegistry()

    /// The injected time: starts at a fixed instant, moves only when told.
    final class Clock: Sendable {
        private let value = Mutex(Date(timeIntervalSince1970: 1_790_000_000))
        var now: Date { value.withLock { $0 } }
        var milliseconds: Int64 { Int64(now.timeIntervalSince1970 * 1000) }
        func advance(seconds: Double) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    init(
        revocation: (@Sendable (AppleSigningChain) throws -> AppleRevocationChecker)? = nil,
        consumptionPolicy: AppleConsumptionPolicy? = nil, admission: NotificationAdmission.Limits = .default
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("verifier-apple-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        ledger = try await InProcessLedger(directory: directory).client
        let clock = Clock()
        self.clock = clock
        var options = AppleSigningChain.Options()
        options.ocspResponderURL = "http://ocsp.test.invalid/ocsp"  // only asked with online checks on
        chain = try AppleSigningChain.generate(now: clock.now, options: options)
        api = FakeAppStoreAPI(chain: chain, now: { clock.now })
        let verifier = try AppleSignedDataVerifier(
            anchors: [chain.root], configuration: .init(bundleID: Self.bundleID, environment: .sandbox))
        adapter = AppleAdapter(
            verifiers: [.sandbox: verifier], api: api, ledger: ledger, revocation: try revocation?(chain),
            now: { clock.now },
            logger: Logger(service: "verifier-test", minimumLevel: .error, sink: .capturing()), metrics: metrics,
            // A loaded test machine must not turn a slow answer into a 503 the test did not ask for.
            admission: admission, ledgerTimeout: .seconds(60), consumptionPolicy: consumptionPolicy)
        // A thread for each of the tests' concurrent deliveries, and no idle cut while a loaded
        // machine keeps one waiting: the ingress answers, as it would with its own settings.
        http = HTTPServer(
            host: "127.0.0.1", port: 0, timeoutSeconds: 120, threads: 8,
            logger: Logger(service: "verifier-test", minimumLevel: .error, sink: .capturing()))
        adapter.installNotificationRoutes(on: http)
        try http.start()
    }

    /// The value of `series` on the adapter's metrics page, `{store="apple"}` added to a bare name.
    func metric(_ series: String) -> Double? {
        metrics.value(series.contains("{") ? series : series + "{store=\"apple\"}")
    }

    func stop() async {
        http.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Store data

    func transaction(
        original: String = "2000000001", id: String = "2000000009", product: String = "com.example.monthly",
        expiresIn days: Double = 30, token: String? = nil, revokedAt: Int64? = nil
    ) -> [String: any Sendable] {
        var transaction: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": original, "bundleId": Self.bundleID, "productId": product,
            "subscriptionGroupIdentifier": "21000001", "purchaseDate": clock.milliseconds - 86_400_000,
            "originalPurchaseDate": clock.milliseconds - 86_400_000,
            "expiresDate": clock.milliseconds + Int64(days * 86_400_000), "type": "Auto-Renewable Subscription",
            "inAppOwnershipType": "PURCHASED", "environment": "Sandbox", "signedDate": clock.milliseconds,
            "transactionReason": "PURCHASE",
        ]
        if let token { transaction["appAccountToken"] = token }
        if let revokedAt {
            transaction["revocationDate"] = revokedAt
            transaction["revocationReason"] = 0
        }
        return transaction
    }

    func renewal(original: String = "2000000001", autoRenew: Int = 1) -> [String: any Sendable] {
        [
            "originalTransactionId": original, "productId": "com.example.monthly",
            "autoRenewProductId": "com.example.monthly", "autoRenewStatus": autoRenew, "environment": "Sandbox",
            "signedDate": clock.milliseconds,
        ]
    }

    /// A signed notification carrying `transaction`, `renewal` and `status` (each left out when nil).
    func notification(
        uuid: String = UUID().uuidString.lowercased(), type: String, subtype: String? = nil,
        transaction: [String: any Sendable], renewal: [String: any Sendable]?, status: Int? = 1
    ) throws -> String {
        var data: [String: any Sendable] = [
            "bundleId": Self.bundleID, "environment": "Sandbox", "signedTransactionInfo": try chain.sign(transaction),
        ]
        if let status { data["status"] = status }
        if let renewal { data["signedRenewalInfo"] = try chain.sign(renewal) }
        var payload: [String: any Sendable] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": clock.milliseconds,
            "data": data,
        ]
        if let subtype { payload["subtype"] = subtype }
        return try chain.sign(payload)
    }

    // MARK: HTTP

    /// POSTs `body` to the Sandbox notification path, with a `traceparent` header when given;
    /// returns the status and body.
    func post(_ body: [UInt8], traceparent: String? = nil) async throws -> (Int, String) {
        var request = URLRequest(
            url: URL(string: "http://127.0.0.1:\(http.port)\(AppleAdapter.notificationPath(.sandbox))")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let traceparent { request.setValue(traceparent, forHTTPHeaderField: "traceparent") }
        let (data, status) = try await loopbackExchange(request)
        return (status, String(decoding: data, as: UTF8.self))
    }

    func deliver(_ signedPayload: String, traceparent: String? = nil) async throws -> (Int, String) {
        try await post(
            Array(try JSONSerialization.data(withJSONObject: ["signedPayload": signedPayload])),
            traceparent: traceparent)
    }

    func history(_ key: SubscriptionKey) async throws -> [LifecycleEvent] {
        try await ledger.getHistory(GetHistoryRequest(key: key)).events
    }
}

extension LedgerClientProtocol {
    /// The ids of every inbox entry of `store`, whatever its status (a plain ListInbox shows
    /// only pending and failed ones).
    func allInboxIDs(_ store: Store? = nil) async throws -> [String] {
        var ids: [String] = []
        for status in [InboxStatus.pending, .failed, .processed, .rejected] {
            ids += try await listInbox(ListInboxRequest(status: status, store: store, pageSize: 100)).entries
                .map(\.notificationID)
        }
        return ids
    }
}
