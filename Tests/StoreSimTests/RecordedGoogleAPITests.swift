import Crypto
import Foundation
import GooglePlay
import HTTP
import Observability
import StoreSimKit
import Synchronization
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// storesim's recorded Play Developer API: which recorded answer `subscriptionsv2.get` gives as
/// notifications are pushed in any order (on made-up pairs), and, on the real Play data beside
/// the checkout, that the pushes authenticate and decode as the verifier reads them and its own
/// client reads the answers.
@Suite("Store simulator: the recorded Play Developer API")
struct RecordedGoogleAPITests {
    static let fixture = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(
            "shared/fixtures/google/subscriptionsv2/rtdn-and-state-60-scenarios.json")
    static var fixtureAvailable: Bool { FileManager.default.fileExists(atPath: fixture.path) }

    /// A recorded pair: a subscription notification of `type` for `token` and the answer
    /// reading `state`.
    static func pair(_ type: Int, _ token: String, at time: Int64, state: String) -> [String: Any] {
        [
            "rtdn_event": [
                "version": "1.0", "packageName": GooglePlayWire.package, "eventTimeMillis": String(time),
                "subscriptionNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token, "subscriptionId": "pro_sub",
                ] as [String: Any],
            ] as [String: Any],
            "current_state": [
                "kind": "androidpublisher#subscriptionPurchaseV2", "subscriptionState": state,
                "startTime": "2026-01-01T00:00:00.000Z",
                "lineItems": [["productId": "pro_sub", "expiryTime": "2026-02-01T00:00:00.000Z"]],
            ] as [String: Any],
        ]
    }

    /// Token A bought, cancelled and expired; token B bought.
    static func madeUp() throws -> RecordedGoogleData {
        let scenarios = [
            pair(4, "token-a", at: 1000, state: "SUBSCRIPTION_STATE_ACTIVE"),
            pair(3, "token-a", at: 2000, state: "SUBSCRIPTION_STATE_CANCELED"),
            pair(13, "token-a", at: 3000, state: "SUBSCRIPTION_STATE_EXPIRED"),
            pair(4, "token-b", at: 1500, state: "SUBSCRIPTION_STATE_ACTIVE"),
        ]
        return try RecordedGoogleData(json: try JSONSerialization.data(withJSONObject: ["scenarios": scenarios]))
    }

    /// A recorded API over `data` served over HTTP, with its control surface on the same server.
    final class Served: @unchecked Sendable {  // used from one test task at a time
        let api: RecordedGoogleAPI
        let server: HTTPServer
        let key: PrivateKey
        let directory: URL
        let authenticator: PubSubPushAuthenticator

        init(_ data: RecordedGoogleData, package: String = GooglePlayWire.package) throws {
            server = try GooglePlayWire.startedServer()
            key = try TestRSAKeys.key(0)
            api = try RecordedGoogleAPI(
                data: data,
                identity: try GooglePlayWire.identity(
                    accountKey: key, tokenURL: "http://127.0.0.1:\(server.port)/token"),
                packageName: package)
            api.register(on: server)
            api.registerControl(on: server, delivery: NotificationDelivery(url: nil))
            (directory, authenticator) = try GooglePlayWire.pushAuthenticator(
                jwks: api.jwks, directoryPrefix: "storesim-recorded")
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// `subscriptionsv2.get` of `token` in `package`: the status and body.
        func get(_ token: String, package: String = GooglePlayWire.package) async throws -> (Int, String) {
            let access = try await GooglePlayWire.accessToken(
                port: server.port, tokenURL: api.identity.tokenURL, key: key)
            return try await GooglePlayWire.call(
                "GET", "/androidpublisher/v3/applications/\(package)/purchases/subscriptionsv2/tokens/\(token)",
                port: server.port, token: access)
        }

        /// Pushes scenario `index`, authenticated and decoded as the verifier does it.
        func push(_ index: Int) async throws -> (PubSubPushEnvelope, DeveloperNotification) {
            let (body, bearer) = try api.push(index)
            return try await GooglePlayWire.received([UInt8](body), bearer: bearer, by: authenticator)
        }
    }

    @Test("a token's GET answers the response recorded with its most recently pushed notification, in any push order")
    func mostRecentlyPushed() async throws {
        let data = try Self.madeUp()
        let served = try Served(data)
        #expect(try await served.get("token-a").0 == 404)
        let (envelope, notification) = try await served.push(2)
        #expect(envelope.messageID == "rec-2" && envelope.publishTime == "1970-01-01T00:00:03.000Z")
        #expect(notification.eventTimeMillis == 3000 && notification.packageName == GooglePlayWire.package)
        #expect(envelope.data == [UInt8](data.scenarios[2].notification))
        var (status, body) = try await served.get("token-a")
        #expect(status == 200 && body == String(decoding: data.scenarios[2].answer, as: UTF8.self))
        #expect(body.contains("SUBSCRIPTION_STATE_EXPIRED"))
        _ = try await served.push(0)
        (status, body) = try await served.get("token-a")
        #expect(status == 200 && body.contains("SUBSCRIPTION_STATE_ACTIVE"))
        // Another token's push changes nothing for this one.
        #expect(try await served.get("token-b").0 == 404)
        _ = try await served.push(3)
        #expect(try await served.get("token-a").1.contains("SUBSCRIPTION_STATE_ACTIVE"))
        #expect(try await served.get("token-b").1.contains("SUBSCRIPTION_STATE_ACTIVE"))
        #expect(served.api.pushed == [2, 0, 3])
        #expect(served.api.answer(for: "token-a") == data.scenarios[0].answer)
        let outOfRange = #expect(throws: SimError.self) { try served.api.push(4) }
        #expect(outOfRange?.kind == .notFound)
        #expect(try await served.get("token-a", package: "com.other.app").0 == 404)
    }

    @Test("the control surface pushes a recorded notification by index and lists what was pushed")
    func controlSurface() async throws {
        let served = try Served(try Self.madeUp())
        let (status, answer) = try await httpPost(
            port: served.server.port, path: "/control/google/recorded/push", body: #"{"index":1}"#)
        #expect(status == 200 && answer == #"{"messageId":"rec-1","notifications":[{"id":"rec-1","status":null}]}"#)
        #expect(
            try await httpPost(port: served.server.port, path: "/control/google/recorded/push", body: "{}").0 == 400)
        let (_, listed) = try await httpGet(port: served.server.port, path: "/control/google/recorded")
        #expect(listed == #"{"pushed":[1],"scenarios":4}"#)
        #expect(try await served.get("token-a").1.contains("SUBSCRIPTION_STATE_CANCELED"))
    }

    @Test("recorded data of another app, or not shaped as scenarios, is refused")
    func refusals() throws {
        let data = try Self.madeUp()
        let key = try TestRSAKeys.key(1)
        let identity = GoogleSimAPI.Identity(
            serviceAccountEmail: GooglePlayWire.serviceAccount,
            serviceAccountKey: try PublicKey(pem: key.publicKeyPEM()), tokenURL: "http://127.0.0.1:1/token",
            pushServiceAccount: GooglePlayWire.pushServiceAccount, pushAudience: GooglePlayWire.pushAudience,
            pushKey: key, pushKeyID: "push-1")
        let other = #expect(throws: SimError.self) {
            try RecordedGoogleAPI(data: data, identity: identity, packageName: "com.other.app")
        }
        #expect(other?.message == "the recorded data is for com.example.app, not com.other.app")
        let shape = #expect(throws: SimError.self) { try RecordedGoogleData(json: Data(#"{"pairs":[]}"#.utf8)) }
        #expect(shape?.kind == .badRequest)
        let missing = #expect(throws: SimError.self) {
            try RecordedGoogleData(json: Data(#"{"scenarios":[{"rtdn_event":{"packageName":"a"}}]}"#.utf8))
        }
        #expect(missing?.message.hasPrefix("recorded scenario 0 ") == true)
    }

    @Test(
        "the 60 real Play pairs: pushes authenticate and decode, and the verifier's client reads each token's recorded answer",
        .enabled(if: RecordedGoogleAPITests.fixtureAvailable, "shared/fixtures beside the checkout is absent"))
    func realPlayData() async throws {
        let data = try RecordedGoogleData(contentsOfFile: Self.fixture.path)
        #expect(data.scenarios.count == 60 && data.packageNames == ["network.loki.messenger"])
        let served = try Served(data, package: "network.loki.messenger")
        let client = try GooglePlayWire.client(
            port: served.server.port, tokenURL: served.api.identity.tokenURL, key: served.key)
        // The upgrade: the new token (33) links the old (32); the old then expires replaced (34).
        // Pushed out of order, each token answers with its own most recent push.
        for index in [34, 33, 32] { _ = try await served.push(index) }
        let upgraded = try await client.subscription(
            packageName: "network.loki.messenger", token: data.scenarios[33].purchaseToken)
        #expect(upgraded.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(upgraded.linkedPurchaseToken == data.scenarios[32].purchaseToken)
        #expect(
            upgraded.testPurchase != nil
                && upgraded.lineItems?.first?.offerDetails?.basePlanId == "session-pro-3-months")
        let old = try await client.subscription(
            packageName: "network.loki.messenger", token: data.scenarios[32].purchaseToken)
        #expect(old.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")  // scenario 32, pushed last
        let (_, raw) = try await served.get(data.scenarios[32].purchaseToken, package: "network.loki.messenger")
        #expect(raw == String(decoding: data.scenarios[32].answer, as: UTF8.self))
        // Every recorded notification authenticates and decodes with its recorded event time.
        for index in data.scenarios.indices {
            let (envelope, notification) = try await served.push(index)
            #expect(envelope.messageID == "rec-\(index)")
            #expect(notification.eventTimeMillis == data.scenarios[index].eventTime)
            guard case .subscription(let subscription) = notification.kind else {
                Issue.record("scenario \(index) is not a subscription notification")
                continue
            }
            #expect(subscription.notificationType.rawValue == data.scenarios[index].notificationType)
        }
        // The revocation: 12 then 13 (54, 55) both read EXPIRED.
        _ = try await served.push(54)
        let revoked = try await client.subscription(
            packageName: "network.loki.messenger", token: data.scenarios[54].purchaseToken)
        #expect(revoked.subscriptionState == "SUBSCRIPTION_STATE_EXPIRED")
    }

    @Test(
        "storesim with STORESIM_GOOGLE_RECORDED serves the recorded API to the service account it writes and pushes a recorded notification by index",
        .enabled(if: RecordedGoogleAPITests.fixtureAvailable, "shared/fixtures beside the checkout is absent"),
        .timeLimit(.minutes(5)))
    func launchMode() async throws {
        let data = try RecordedGoogleData(contentsOfFile: Self.fixture.path)
        let received = Mutex<[(body: [UInt8], authorization: String?)]>([])
        let receiver = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "receiver", sink: .capturing()))
        receiver.route("POST", "/google/rtdn") { request in
            received.withLock { $0.append((request.body, request.headers["authorization"])) }
            return HTTPResponse(status: 204)
        }
        try receiver.start()
        defer { receiver.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storesim-launch-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storesim = try ServiceProcess(
            "storesim",
            environment: [
                "STORESIM_DIR": directory.path, "STORESIM_GOOGLE_PACKAGE": "network.loki.messenger",
                "STORESIM_GOOGLE_RECORDED": Self.fixture.path,
                "STORESIM_GOOGLE_PUSH_URL": "http://127.0.0.1:\(receiver.port)/google/rtdn",
            ])
        defer { storesim.stop() }
        let ready = try await storesim.line(containing: "\"msg\":\"storesim ready\"", within: 30)
        let control = try #require(Int(ServiceProcess.field("control_port", in: ready) ?? ""))
        let port = try #require(Int(ServiceProcess.field("port", in: ready) ?? ""))
        let settings = try ServiceFiles.environment(at: directory.appendingPathComponent("verifier.env"))
        #expect(settings["GOOGLE_PACKAGES"] == "network.loki.messenger")
        let accountFile = try #require(settings["GOOGLE_SERVICE_ACCOUNT_FILE"])
        let accountJSON = try Data(contentsOf: URL(fileURLWithPath: accountFile))
        let account = try #require(try JSONSerialization.jsonObject(with: accountJSON) as? [String: String])
        let key = try PrivateKey(pem: try #require(account["private_key"]))
        let access = try await GooglePlayWire.accessToken(
            port: port, tokenURL: try #require(account["token_uri"]), key: key)
        let token = data.scenarios[5].purchaseToken
        let path = "/androidpublisher/v3/applications/network.loki.messenger/purchases/subscriptionsv2/tokens/\(token)"
        #expect(try await GooglePlayWire.call("GET", path, port: port, token: access).0 == 404)

        let (status, answer) = try await httpPost(
            port: control, path: "/control/google/recorded/push", body: #"{"index":5}"#)
        #expect(status == 200 && answer == #"{"messageId":"rec-5","notifications":[{"id":"rec-5","status":204}]}"#)
        let (got, body) = try await GooglePlayWire.call("GET", path, port: port, token: access)
        #expect(got == 200 && body == String(decoding: data.scenarios[5].answer, as: UTF8.self))
        let push = try #require(received.withLock { $0.first })
        let authenticator = PubSubPushAuthenticator(
            configuration: .init(
                audience: try #require(settings["GOOGLE_PUSH_AUDIENCE"]),
                serviceAccountEmail: try #require(settings["GOOGLE_PUSH_SERVICE_ACCOUNT"]),
                keySource: .file(try #require(settings["GOOGLE_JWKS"]))))
        _ = try await authenticator.authenticate(authorizationHeader: push.authorization)
        let envelope = try PubSubPushEnvelope(json: push.body)
        #expect(envelope.messageID == "rec-5" && envelope.data == [UInt8](data.scenarios[5].notification))
        let (_, listed) = try await httpGet(port: control, path: "/control/google/recorded")
        #expect(listed == #"{"pushed":[5],"scenarios":60}"#)
    }

    @Test(
        "storesim refuses to start when the recorded Play data is for another package",
        .enabled(if: RecordedGoogleAPITests.fixtureAvailable, "shared/fixtures beside the checkout is absent"),
        .timeLimit(.minutes(5)))
    func launchModeOtherPackage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storesim-launch-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storesim = try ServiceProcess(
            "storesim", environment: ["STORESIM_DIR": directory.path, "STORESIM_GOOGLE_RECORDED": Self.fixture.path])
        #expect(await storesim.waitForExit() == 2)
        #expect(
            storesim.log.contains {
                $0.contains("the recorded data is for network.loki.messenger, not com.example.app")
            })
    }
}
