import Crypto
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
        return try AppleAPICall.historyPage(
            data.history(original, asOf: at).map(\.jws), request, pageSize: Self.historyPageSize, bundleID: bundleID,
            appAppleID: appAppleID, environment: data.environment)
    }

    // MARK: Requests

    private func authorized(_ request: HTTPRequest, _ body: () throws -> [String: any Sendable]) -> HTTPResponse {
        AppleAPICall.answer(
            request, credentials: credentials, bundleID: bundleID, faults: faults, now: wallClock(), body)
    }

    private func lastSegment(_ request: HTTPRequest, after prefix: String) throws -> String {
        try AppleAPICall.transactionID(request, after: prefix)
    }
}
