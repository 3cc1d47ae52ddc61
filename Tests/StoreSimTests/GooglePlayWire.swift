import Crypto
import Foundation
import GooglePlay
import HTTP
import Observability
import StoreSimKit
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A simulated Play store served over HTTP and read as raw JSON, the way Google's answers reach
/// a backend: the service-account token exchange, then GETs and POSTs with the access token.
/// Pushes are authenticated by the verifier's `PubSubPushAuthenticator` and decoded as the
/// verifier decodes them.
final class GooglePlayWire: @unchecked Sendable {  // used from one test task at a time
    static let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    static let day: Int64 = 86_400_000
    static let package = "com.example.app"
    static let serviceAccount = "verifier@storesim.iam.gserviceaccount.com"
    static let pushServiceAccount = "push@storesim.iam.gserviceaccount.com"
    static let pushAudience = "https://verifier.example.com/google/rtdn"

    /// One push as the verifier takes it: the message id, the notification JSON as sent (keys
    /// sorted), what it is (a subscription code `"4"`, `"oneTime 1"` or `"voided"`) and the
    /// token it names.
    struct Push {
        let messageID: String
        let json: String
        let kind: String
        let token: String
        let eventTimeMillis: Int64
    }

    let store: GoogleSimStore
    let api: GoogleSimAPI
    let server: HTTPServer
    let authenticator: PubSubPushAuthenticator
    let accountKey: PrivateKey
    private let directory: URL
    private var accessToken: String?

    /// The products every test here sells: two monthly plans, a monthly add-on, a prepaid
    /// month, a yearly plan and two one-time products.
    static func configuration() -> GoogleSimConfiguration {
        var configuration = GoogleSimConfiguration(
            packageName: package,
            products: [
                GoogleSimProduct(id: "pro_sub", basePlanID: "monthly", period: .months(1)),
                GoogleSimProduct(id: "premium_sub", basePlanID: "monthly", period: .months(1)),
                GoogleSimProduct(id: "extra_storage", basePlanID: "monthly", period: .months(1)),
                GoogleSimProduct(id: "pass_sub", basePlanID: "prepaid-month", period: .months(1), prepaid: true),
                GoogleSimProduct(id: "pro_yearly", basePlanID: "yearly", period: .years(1)),
            ])
        configuration.oneTimeProducts = [
            GoogleSimOneTimeProduct(id: "coins_100"), GoogleSimOneTimeProduct(id: "lifetime"),
        ]
        return configuration
    }

    init(_ configuration: GoogleSimConfiguration = GooglePlayWire.configuration()) throws {
        store = GoogleSimStore(configuration: configuration, clock: SimClock(startMilliseconds: Self.start))
        server = try Self.startedServer()
        accountKey = try TestRSAKeys.key(0)
        api = GoogleSimAPI(
            store: store,
            identity: try Self.identity(accountKey: accountKey, tokenURL: "http://127.0.0.1:\(server.port)/token"))
        api.register(on: server)
        (directory, authenticator) = try Self.pushAuthenticator(jwks: api.jwks, directoryPrefix: "storesim-play")
    }

    /// The whole simulator on this store's clock and API, beside an App Store selling
    /// `AppleSimStrictnessTests`' products, delivering no notifications, with its control surface
    /// on a started loopback server of its own (the caller stops it).
    func controlServer() throws -> (simulator: StoreSimulator, server: HTTPServer) {
        let apple = AppleSimStore(
            configuration: AppleSimStrictnessTests.store().configuration, clock: store.clock,
            chain: AppleSimStoreTests.chain)
        let simulator = StoreSimulator(
            clock: store.clock, apple: apple, appleFaults: APIFaults(), appleDelivery: NotificationDelivery(url: nil),
            googleAPI: api, googleDelivery: NotificationDelivery(url: nil))
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "storesim", sink: .capturing()))
        simulator.registerControl(on: server)
        try server.start()
        return (simulator, server)
    }

    /// An HTTP server on a free loopback port, started, its log captured. The caller stops it.
    static func startedServer() throws -> HTTPServer {
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "storesim", sink: .capturing()))
        try server.start()
        return server
    }

    /// The identity a simulated Play API serves: the service account whose key is `accountKey`
    /// gets access tokens at `tokenURL`; pushes are signed with test key 1 for `pushAudience`.
    static func identity(accountKey: PrivateKey, tokenURL: String) throws -> GoogleSimAPI.Identity {
        .init(
            serviceAccountEmail: serviceAccount, serviceAccountKey: try PublicKey(pem: accountKey.publicKeyPEM()),
            tokenURL: tokenURL, pushServiceAccount: pushServiceAccount, pushAudience: pushAudience,
            pushKey: try TestRSAKeys.key(1), pushKeyID: "push-1")
    }

    /// A new temporary directory named after `directoryPrefix` holding `jwks` as `jwks.json`, and
    /// the verifier's push authenticator reading it. The caller removes the directory.
    static func pushAuthenticator(jwks: [UInt8], directoryPrefix: String) throws -> (URL, PubSubPushAuthenticator) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(directoryPrefix)-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("jwks.json")
        try Data(jwks).write(to: file)
        let authenticator = PubSubPushAuthenticator(
            configuration: .init(
                audience: pushAudience, serviceAccountEmail: pushServiceAccount, keySource: .file(file.path)))
        return (directory, authenticator)
    }

    /// The verifier's Play Developer API client for a store on `port` whose token endpoint is
    /// `tokenURL`, signing as the service account with `key`; one attempt per call.
    static func client(port: Int, tokenURL: String, key: PrivateKey) throws -> GooglePlayDeveloperAPIClient {
        var configuration = GooglePlayDeveloperAPIClient.Configuration(
            serviceAccount: try GoogleServiceAccount(
                clientEmail: serviceAccount, privateKeyID: "k1", privateKey: key, tokenURI: URL(string: tokenURL)!))
        configuration.baseURL = URL(string: "http://127.0.0.1:\(port)")!
        configuration.maxAttempts = 1
        configuration.notFoundAttempts = 1
        return try GooglePlayDeveloperAPIClient(configuration: configuration)
    }

    /// A push request's `body` as the verifier takes it: its `bearer` token authenticated by
    /// `authenticator`, then the envelope and the notification in it decoded.
    static func received(_ body: [UInt8], bearer: String, by authenticator: PubSubPushAuthenticator) async throws
        -> (PubSubPushEnvelope, DeveloperNotification)
    {
        _ = try await authenticator.authenticate(authorizationHeader: "Bearer \(bearer)")
        let envelope = try PubSubPushEnvelope(json: body)
        return (envelope, try DeveloperNotification(json: envelope.data))
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    static func rfc3339(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// `object` as the API writes JSON: keys sorted, no spaces.
    static func json(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// `…/applications/{package}/purchases` + `rest`.
    static func purchases(_ rest: String) -> String { "/androidpublisher/v3/applications/\(package)/purchases\(rest)" }

    // MARK: Calls

    /// An access token from the token endpoint, for an assertion signed by the service account.
    func token() async throws -> String {
        if let accessToken { return accessToken }
        let token = try await Self.accessToken(port: server.port, tokenURL: api.identity.tokenURL, key: accountKey)
        accessToken = token
        return token
    }

    /// `method` of `path` with the access token; the status and the body as sent.
    func call(_ method: String, _ path: String, body: String = "{}") async throws -> (Int, String) {
        try await Self.call(method, path, port: server.port, token: try await token(), body: body)
    }

    /// An access token from the token endpoint on `port` for an assertion signed by `key` for the
    /// service account, addressed to `tokenURL`.
    static func accessToken(port: Int, tokenURL: String, key: PrivateKey) async throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        let header = try JSONSerialization.data(withJSONObject: ["alg": "RS256", "typ": "JWT"])
        let claims = try JSONSerialization.data(withJSONObject: [
            "iss": serviceAccount, "scope": GoogleSimAPI.scope, "aud": tokenURL, "iat": now, "exp": now + 3600,
        ])
        let assertion = try CompactJWS.sign(
            header: [UInt8](header), payload: [UInt8](claims), key: key, algorithm: .rs256)
        let (status, body) = try await httpPost(
            port: port, path: "/token",
            body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)")
        try #require(status == 200, "the token endpoint answered \(status): \(body)")
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return try #require(object?["access_token"] as? String)
    }

    /// `method` of `path` on `port` with the bearer `token`; the status and the body as sent.
    /// `method` on `path` with the access token; a POST sends `body` (none when empty).
    static func call(_ method: String, _ path: String, port: Int, token: String, body: String = "{}") async throws
        -> (Int, String)
    {
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)\(path)")))
        request.httpMethod = method
        if method == "POST", !body.isEmpty { request.httpBody = Data(body.utf8) }
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, status) = try await loopbackExchange(request)
        return (status, String(decoding: data, as: UTF8.self))
    }

    /// `subscriptionsv2.get` of `token`: the body of a 200 answer.
    func subscription(_ token: String) async throws -> String {
        let (status, body) = try await call("GET", Self.purchases("/subscriptionsv2/tokens/\(token)"))
        try #require(status == 200, "subscriptionsv2.get answered \(status): \(body)")
        return body
    }

    /// `subscriptionsv2.get` of `token`, parsed.
    func subscriptionObject(_ token: String) async throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(try await subscription(token).utf8)) as? [String: Any])
    }

    /// `purchases.products.get` of `token` for `productID`: the body of a 200 answer.
    func product(_ productID: String, _ token: String) async throws -> String {
        let (status, body) = try await call("GET", Self.purchases("/products/\(productID)/tokens/\(token)"))
        try #require(status == 200, "products.get answered \(status): \(body)")
        return body
    }

    /// `voidedpurchases.list` with `query`: the status and the body.
    func voided(_ query: String) async throws -> (Int, String) {
        try await call("GET", Self.purchases("/voidedpurchases?\(query)"))
    }

    /// Each push since the last call, authenticated and decoded as the verifier does it.
    func pushes() async throws -> [Push] {
        var decoded: [Push] = []
        for message in store.takeOutbox() {
            let (body, bearer) = try api.push(message)
            let (envelope, notification) = try await Self.received([UInt8](body), bearer: bearer, by: authenticator)
            #expect(envelope.messageID == message.id)
            #expect(notification.packageName == Self.package && notification.eventTimeMillis == message.eventTime)
            let json = String(decoding: envelope.data, as: UTF8.self)
            switch notification.kind {
            case .subscription(let subscription):
                decoded.append(
                    Push(
                        messageID: message.id, json: json, kind: "\(subscription.notificationType.rawValue)",
                        token: subscription.purchaseToken, eventTimeMillis: notification.eventTimeMillis))
            case .oneTimeProduct(let oneTime):
                decoded.append(
                    Push(
                        messageID: message.id, json: json, kind: "oneTime \(oneTime.notificationType.rawValue)",
                        token: oneTime.purchaseToken, eventTimeMillis: notification.eventTimeMillis))
            case .voidedPurchase(let voided):
                decoded.append(
                    Push(
                        messageID: message.id, json: json, kind: "voided", token: voided.purchaseToken,
                        eventTimeMillis: notification.eventTimeMillis))
            default:
                Issue.record("an unexpected notification \(notification.kind)")
            }
        }
        return decoded
    }

    /// The notification JSON the store sends for `fields` at `eventTime`.
    static func notification(_ fields: [String: Any], at eventTime: Int64) -> String {
        var object = fields
        object["version"] = "1.0"
        object["packageName"] = package
        object["eventTimeMillis"] = String(eventTime)
        return json(object)
    }

    /// A subscription notification's JSON.
    static func subscriptionNotification(_ type: Int, _ token: String, _ productID: String, at eventTime: Int64)
        -> String
    {
        notification(
            [
                "subscriptionNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token, "subscriptionId": productID,
                ] as [String: Any]
            ], at: eventTime)
    }
}
