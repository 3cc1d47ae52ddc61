public import Crypto
public import Foundation
public import HTTP
import Synchronization

/// The App Store Server API endpoints the verifier calls, answered only from recorded
/// Apple-signed data (`RecordedAppleData`) as it stood at a settable instant, the "as of" time:
/// the paths, JSON shapes, bearer-token check and error codes of `AppleSimAPI`, with payloads
/// that verify against Apple's real root because Apple signed them.
///
/// - `GET /inApps/v1/subscriptions/{id}`: one group whose `lastTransactions` holds the status
///   of the newest notification signed at or before the as-of time, the latest transaction
///   known then and the newest renewal info signed at or before then.
/// - `GET /inApps/v1/transactions/{id}`: the newest version of that transaction.
/// - `GET /inApps/v2/history/{id}`: the newest version of each distinct transaction of the
///   subscription, oldest purchase first, `historyPageSize` a page.
/// - `POST /inApps/v1/notifications/history`: always empty (deliveries are the test's business).
///
/// Changing a transaction's `appAccountToken` is not served: recorded data cannot change.
public final class RecordedAppleAPI: Sendable {
    public let data: RecordedAppleData
    public let credentials: AppleSimAPI.Credentials
    /// The app the bearer token must name (`bid`) and the answers carry.
    public let bundleID: String
    public let appAppleID: Int64
    /// Failures to answer instead, for a while.
    public let faults = APIFaults()
    /// Wall-clock time for token expiry (tokens are signed with the caller's clock).
    public let wallClock: @Sendable () -> Date
    private let asOfTime: Mutex<Int64>
    /// Transactions in one page of transaction history (Apple's page size).
    public static let historyPageSize = 20

    /// The API over `data` as of `asOf` (epoch ms); throws `SimError(.badRequest)` when a
    /// record names another app than `bundleID`.
    public init(
        data: RecordedAppleData, credentials: AppleSimAPI.Credentials, bundleID: String, appAppleID: Int64,
        asOf: Int64, wallClock: @escaping @Sendable () -> Date = { Date() }
    ) throws(SimError) {
        let others = data.bundleIDs.subtracting([bundleID])
        guard others.isEmpty else {
            throw SimError(
                .badRequest, "the recorded data is for \(others.sorted().joined(separator: ", ")), not \(bundleID)")
        }
        self.data = data
        self.credentials = credentials
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.wallClock = wallClock
        asOfTime = Mutex(asOf)
    }

    /// The instant the answers are taken at (epoch ms).
    public var asOf: Int64 {
        get { asOfTime.withLock { $0 } }
        set { asOfTime.withLock { $0 = newValue } }
    }

    /// Registers the store endpoints on `server`.
    public func register(on server: HTTPServer) {
        server.route("GET", "/inApps/v1/subscriptions/*") { [self] request in
            authorized(request) { try statuses(try lastSegment(request, after: "/inApps/v1/subscriptions/")) }
        }
        server.route("GET", "/inApps/v1/transactions/*") { [self] request in
            authorized(request) {
                let id = try lastSegment(request, after: "/inApps/v1/transactions/")
                guard let record = data.transaction(id, asOf: asOf) else { throw AppleSimAPI.APIFailure.notFound }
                return ["signedTransactionInfo": record.jws]
            }
        }
        server.route("GET", "/inApps/v2/history/*") { [self] request in
            authorized(request) { try history(request) }
        }
        server.route("POST", "/inApps/v1/notifications/history") { [self] request in
            authorized(request) { ["hasMore": false, "notificationHistory": [] as [String]] }
        }
    }

    /// Registers `GET /control/apple/recorded/as-of` (answers `{"asOf": ms}`) and `POST` of the
    /// same path with `{"at": ms}` (sets it, answers the same) on the control `server`.
    public func registerControl(on server: HTTPServer) {
        let path = "/control/apple/recorded/as-of"
        server.route("GET", path) { [self] _ in .json("{\"asOf\":\(asOf)}") }
        server.route("POST", path) { [self] request in
            guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
                let at = body["at"] as? Int
            else {
                return StoreSimulator.failure(
                    SimError(.badRequest, "the body needs the integer field \"at\" (epoch ms)"))
            }
            asOf = Int64(at)
            return .json("{\"asOf\":\(asOf)}")
        }
    }

    // MARK: Answers

    private func statuses(_ id: String) throws -> [String: any Sendable] {
        let at = asOf
        guard let original = data.originalTransactionID(of: id, asOf: at),
            let latest = data.latestTransaction(original, asOf: at)
        else { throw AppleSimAPI.APIFailure.notFound }
        var last: [String: any Sendable] = [
            "originalTransactionId": original, "signedTransactionInfo": latest.jws,
        ]
        last["status"] = data.status(original, asOf: at)
        last["signedRenewalInfo"] = data.renewalInfo(original, asOf: at)?.jws
        var group: [String: any Sendable] = ["lastTransactions": [last]]
        group["subscriptionGroupIdentifier"] = latest.groupIdentifier
        var answer: [String: any Sendable] = [
            "environment": data.environment, "bundleId": bundleID, "data": [group],
        ]
        // Apple leaves appAppleId out in the sandbox.
        if data.environment == "Production" { answer["appAppleId"] = appAppleID }
        return answer
    }

    /// Transaction history, `revision` the index of the next page's first transaction.
    private func history(_ request: HTTPRequest) throws -> [String: any Sendable] {
        let at = asOf
        let id = try lastSegment(request, after: "/inApps/v2/history/")
        guard let original = data.originalTransactionID(of: id, asOf: at) else {
            throw AppleSimAPI.APIFailure.notFound
        }
        let signed = data.history(original, asOf: at).map(\.jws)
        let start = request.query["revision"].map { Int($0) ?? -1 } ?? 0
        guard (0...signed.count).contains(start) else {
            throw AppleSimAPI.APIFailure.apple(400, 4_000_005, "Invalid revision.")
        }
        let end = min(signed.count, start + Self.historyPageSize)
        return [
            "revision": String(end), "hasMore": end < signed.count, "bundleId": bundleID, "appAppleId": appAppleID,
            "environment": data.environment, "signedTransactions": Array(signed[start..<end]),
        ]
    }

    // MARK: Requests

    private func authorized(_ request: HTTPRequest, _ body: () throws -> [String: any Sendable]) -> HTTPResponse {
        do {
            try authenticate(request)
            if let status = faults.take() {
                switch status {
                case 429: return AppleSimAPI.error(429, 4_290_000, "Rate limit exceeded.")
                case 500..<600:
                    return AppleSimAPI.error(
                        status, 5_000_001, "An unknown retryable error occurred. Please try again.")
                default: return AppleSimAPI.error(status, 0, "Injected failure.")
                }
            }
            let json = try JSONSerialization.data(withJSONObject: try body(), options: [.sortedKeys])
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: [UInt8](json))
        } catch AppleSimAPI.APIFailure.unauthorized {
            return HTTPResponse(status: 401)
        } catch AppleSimAPI.APIFailure.notFound {
            return AppleSimAPI.error(404, 4_040_010, "Transaction id not found.")
        } catch AppleSimAPI.APIFailure.apple(let status, let code, let message) {
            return AppleSimAPI.error(status, code, message)
        } catch {
            return AppleSimAPI.error(500, 5_000_000, "An unknown error occurred.")
        }
    }

    /// The bearer token, checked as `AppleSimAPI` checks it: ES256, our key id, signed by the
    /// key, for our issuer, audience `appstoreconnect-v1` and the recorded app, not expired, and
    /// at most an hour long.
    private func authenticate(_ request: HTTPRequest) throws {
        guard let header = request.headers["authorization"], header.hasPrefix("Bearer "),
            let jws = try? CompactJWS(String(header.dropFirst("Bearer ".count))),
            let head = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            head["alg"] as? String == "ES256", head["kid"] as? String == credentials.keyID,
            let signature = try? ECDSASignature.der(fromRaw: jws.signature, coordinateBytes: 32),
            credentials.publicKey.verifySHA256(signature: signature, message: jws.signingInput),
            let claims = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any],
            claims["iss"] as? String == credentials.issuerID, claims["aud"] as? String == "appstoreconnect-v1",
            claims["bid"] as? String == bundleID,
            let issued = (claims["iat"] as? NSNumber)?.int64Value,
            let expires = (claims["exp"] as? NSNumber)?.int64Value
        else { throw AppleSimAPI.APIFailure.unauthorized }
        let now = Int64(wallClock().timeIntervalSince1970)
        guard expires > now, issued <= now + 60, expires - issued <= 3600 else {
            throw AppleSimAPI.APIFailure.unauthorized
        }
    }

    private func lastSegment(_ request: HTTPRequest, after prefix: String) throws -> String {
        let id = String(request.path.dropFirst(prefix.count))
        guard !id.isEmpty, !id.contains("/") else { throw AppleSimAPI.APIFailure.notFound }
        guard id.allSatisfy(\.isASCII), id.allSatisfy(\.isNumber) else {
            throw AppleSimAPI.APIFailure.apple(400, 4_000_006, "Invalid transaction id.")
        }
        return id
    }
}
