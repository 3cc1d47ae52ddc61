public import Foundation
public import HTTP
import Synchronization

/// The Play Developer API endpoints the verifier calls, answered only from recorded Play data
/// (`RecordedGoogleData`), for conformance replays: the harness pushes the recorded
/// notifications one at a time, in any order (`push`), and `subscriptionsv2.get` of a token
/// answers the response recorded with the notification of that token pushed most recently, so
/// each fetch a notification causes reads what Play answered after it. The token exchange, the
/// bearer check, the error shapes and the push envelope and OIDC token are `GoogleSimAPI`'s.
///
/// - `GET …/purchases/subscriptionsv2/tokens/{token}`: the recorded answer, or 404 (as Play
///   answers a token it does not know) before any notification of the token was pushed.
/// - `POST …/purchases/subscriptions/{id}/tokens/{token}:acknowledge`: accepted, nothing changes
///   (recorded data cannot change).
/// - `GET …/purchases/voidedpurchases`: always an empty page.
/// - One-time purchases are not recorded: `GET …/purchases/products/…` answers 404.
public final class RecordedGoogleAPI: Sendable {
    /// The recorded pairs answered from.
    public let data: RecordedGoogleData
    /// The service account that gets access tokens, and the push identity that signs pushes.
    public let identity: GoogleSimAPI.Identity
    /// The app the paths name and the data is for.
    public let packageName: String
    /// Failures to answer instead, for a while.
    public let faults = APIFaults()
    /// Wall-clock time for token expiry and the push tokens.
    public let wallClock: @Sendable () -> Date
    private let accessTokens = GoogleAPICall.AccessTokens()
    private let pushes = Mutex(Pushes())

    private struct Pushes {
        /// Scenario indices in the order they were pushed.
        var order: [Int] = []
        /// The scenario pushed most recently for each token (as its run names it).
        var latest: [String: Int] = [:]
        /// The run each token pushed belongs to.
        var runs: [String: String] = [:]
    }

    /// The API over `data`; throws `SimError(.badRequest)` when a notification names another app
    /// than `packageName`.
    public init(
        data: RecordedGoogleData, identity: GoogleSimAPI.Identity, packageName: String,
        wallClock: @escaping @Sendable () -> Date = { Date() }
    ) throws(SimError) {
        let others = data.packageNames.subtracting([packageName])
        guard others.isEmpty else {
            throw SimError(
                .badRequest, "the recorded data is for \(others.sorted().joined(separator: ", ")), not \(packageName)")
        }
        self.data = data
        self.identity = identity
        self.packageName = packageName
        self.wallClock = wallClock
    }

    /// The JWKS document of the push signing key.
    public var jwks: [UInt8] { GoogleAPICall.jwks(identity) }

    /// Scenario indices in the order they were pushed.
    public var pushed: [Int] { pushes.withLock { $0.order } }

    /// Records scenario `index` as pushed now and returns its Pub/Sub push body (the recorded
    /// notification, message id `rec-<run><index>`, published at its `eventTimeMillis`) with the
    /// OIDC bearer token. A non-empty `run` replays the data apart from other runs on one system:
    /// every purchase token (the notification's, and `linkedPurchaseToken` in the answers the
    /// run's tokens read) is prefixed with it. Pushing an index again in one run is a
    /// redelivery: the same message id. Throws `.notFound` for an index out of range,
    /// `.conflict` when the token cannot be signed.
    public func push(_ index: Int, run: String = "") throws(SimError) -> (body: Data, bearer: String) {
        guard data.scenarios.indices.contains(index) else {
            throw SimError(.notFound, "no recorded scenario \(index); there are \(data.scenarios.count)")
        }
        let scenario = data.scenarios[index]
        let signed: (body: Data, bearer: String)
        do {
            signed = try GoogleAPICall.push(
                notification: Self.prefixingTokens(scenario.notification, with: run), messageID: "rec-\(run)\(index)",
                publishTime: scenario.eventTime, identity: identity, now: wallClock())
        } catch {
            throw SimError(.conflict, "cannot sign the push token: \(error)")
        }
        pushes.withLock { pushes in
            pushes.order.append(index)
            pushes.latest[run + scenario.purchaseToken] = index
            pushes.runs[run + scenario.purchaseToken] = run
        }
        return signed
    }

    /// What `subscriptionsv2.get` of `token` answers now: the response recorded with the most
    /// recently pushed notification of the token (in its run); nil before one was pushed.
    public func answer(for token: String) -> Data? {
        let (index, run) = pushes.withLock { ($0.latest[token], $0.runs[token] ?? "") }
        return index.map { Self.prefixingTokens(data.scenarios[$0].answer, with: run) }
    }

    /// `json` with every purchase token it names (`purchaseToken` of a notification,
    /// `linkedPurchaseToken`) prefixed with `run`; unchanged for an empty run.
    static func prefixingTokens(_ json: Data, with run: String) -> Data {
        guard !run.isEmpty, var object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            return json
        }
        if let linked = object["linkedPurchaseToken"] as? String { object["linkedPurchaseToken"] = run + linked }
        for kind in ["subscriptionNotification", "oneTimeProductNotification", "voidedPurchaseNotification"] {
            guard var notification = object[kind] as? [String: Any],
                let token = notification["purchaseToken"] as? String
            else { continue }
            notification["purchaseToken"] = run + token
            object[kind] = notification
        }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? json
    }

    /// Registers the token endpoint, the JWKS and the recorded API on `server`.
    public func register(on server: HTTPServer) {
        server.route("POST", "/token") { [self] request in
            GoogleAPICall.token(request, identity: identity, tokens: accessTokens, now: wallClock())
        }
        server.route("GET", "/google/jwks") { [self] _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: jwks)
        }
        let application = "/androidpublisher/v3/applications/\(packageName)/purchases"
        server.route("GET", "\(application)/subscriptionsv2/tokens/*") { [self] request in
            authorized(request) {
                let token = try GoogleAPICall.segment(request.path, after: "\(application)/subscriptionsv2/tokens/")
                guard let answer = answer(for: token) else { throw SimError(.notFound, "no pushed notification") }
                return answer
            }
        }
        server.route("POST", "\(application)/subscriptions/*") { [self] request in
            authorized(request) {
                let call = try GoogleAPICall.tokenAction(request.path, after: "\(application)/subscriptions/")
                guard call.verb == "acknowledge", answer(for: call.token) != nil else {
                    throw GoogleAPICall.Failure.google(404, "NOT_FOUND", "Not found.")
                }
                return nil
            }
        }
        server.route("GET", "\(application)/products/*") { [self] request in
            authorized(request) { throw SimError(.notFound, "one-time purchases are not recorded") }
        }
        server.route("GET", "\(application)/voidedpurchases") { [self] request in
            authorized(request) { Data("{}".utf8) }
        }
    }

    /// Registers on the control `server`: `POST /control/google/recorded/push` with
    /// `{"index": n}` pushes scenario n to `delivery` (answers `messageId` and `notifications`,
    /// each delivery's id and HTTP status), `GET /control/google/recorded` answers
    /// `{"scenarios": count, "pushed": [indices]}`.
    public func registerControl(on server: HTTPServer, delivery: NotificationDelivery) {
        let path = "/control/google/recorded"
        server.route("GET", path) { [self] _ in
            .json(
                "{\"pushed\":[\(pushed.map(String.init).joined(separator: ","))],\"scenarios\":\(data.scenarios.count)}"
            )
        }
        server.route("POST", "\(path)/push") { [self] request in
            guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
                let index = body["index"] as? Int
            else {
                return StoreSimulator.failure(SimError(.badRequest, "the body needs the integer field \"index\""))
            }
            let run = body["run"] as? String ?? ""
            let item: NotificationDelivery.Item
            do throws(SimError) {
                let (pushBody, bearer) = try push(index, run: run)
                item = .init(
                    id: "rec-\(run)\(index)", body: pushBody, headers: ["Authorization": "Bearer \(bearer)"])
            } catch {
                return StoreSimulator.failure(error)
            }
            let answer = BlockingCall.run(timeout: .seconds(60)) { await delivery.deliver([item]) }
            guard case .success(let attempts)? = answer else {
                return StoreSimulator.failure(SimError(.conflict, "the push was not delivered within 60 s"))
            }
            let notifications = attempts.map { attempt -> [String: Any] in
                ["id": attempt.id, "status": attempt.status.map { $0 as Any } ?? NSNull()]
            }
            let json =
                (try? JSONSerialization.data(
                    withJSONObject: ["messageId": item.id, "notifications": notifications], options: [.sortedKeys]))
                ?? Data()
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: [UInt8](json))
        }
    }

    private func authorized(_ request: HTTPRequest, _ body: () throws -> Data?) -> HTTPResponse {
        GoogleAPICall.answer(request, tokens: accessTokens, faults: faults, now: wallClock(), body)
    }
}
