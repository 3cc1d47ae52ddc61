import Crypto
import Foundation
import HTTP

/// What the simulated App Store Server APIs (`AppleSimAPI`, `RecordedAppleAPI`) share: the
/// bearer-token check, injected faults, Apple's error answers, transaction ids in paths and
/// paging of Get Transaction History.
enum AppleAPICall {
    /// Answers one call: 401 without a valid bearer token, an injected fault when one is due,
    /// otherwise `body`'s JSON (an empty 200 for nil) or the Apple error it threw.
    static func answer(
        _ request: HTTPRequest, credentials: AppleSimAPI.Credentials, bundleID: String, faults: APIFaults,
        now: Date, _ body: () throws -> [String: any Sendable]?
    ) -> HTTPResponse {
        if let refused = result({ () throws -> [String: any Sendable]? in
            try authenticate(request, credentials: credentials, bundleID: bundleID, now: now)
            return nil
        }).failure {
            return refused
        }
        return faults.answer(path: request.path) { status in
            switch status {
            case 429: error(429, 4_290_000, "Rate limit exceeded.")
            case 500..<600: error(status, 5_000_001, "An unknown retryable error occurred. Please try again.")
            default: error(status, 0, "Injected failure.")
            }
        } _: {
            result(body).response
        }
    }

    /// `body`'s JSON as an answer (an empty 200 for nil), or the Apple error it threw; `failure`
    /// is set when it threw.
    private static func result(_ body: () throws -> [String: any Sendable]?) -> (
        response: HTTPResponse, failure: HTTPResponse?
    ) {
        func failed(_ response: HTTPResponse) -> (HTTPResponse, HTTPResponse?) { (response, response) }
        do {
            guard let object = try body() else { return (HTTPResponse(status: 200), nil) }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            return (
                HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: [UInt8](data)), nil
            )
        } catch AppleSimAPI.APIFailure.unauthorized {
            return failed(HTTPResponse(status: 401))
        } catch AppleSimAPI.APIFailure.notFound {
            return failed(error(404, 4_040_010, "Transaction id not found."))
        } catch AppleSimAPI.APIFailure.apple(let status, let code, let message) {
            return failed(error(status, code, message))
        } catch let failure as SimError {
            switch failure.kind {
            case .notFound: return failed(error(404, 4_040_010, "Transaction id not found."))
            case .badRequest: return failed(error(400, 4_000_006, "Invalid transaction id."))
            case .conflict: return failed(error(500, 5_000_000, "An unknown error occurred."))
            }
        } catch {
            return failed(Self.error(500, 5_000_000, "An unknown error occurred."))
        }
    }

    /// Apple's error body.
    static func error(_ status: Int, _ code: Int, _ message: String) -> HTTPResponse {
        .json("{\"errorCode\":\(code),\"errorMessage\":\"\(message)\"}", status: status)
    }

    /// The bearer token: ES256, the key id, signed by the key, for the issuer, audience
    /// `appstoreconnect-v1` and `bundleID`, not expired at `now`, and at most an hour long.
    static func authenticate(
        _ request: HTTPRequest, credentials: AppleSimAPI.Credentials, bundleID: String, now: Date
    ) throws {
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
        let seconds = Int64(now.timeIntervalSince1970)
        guard expires > seconds, issued <= seconds + 60, expires - issued <= 3600 else {
            throw AppleSimAPI.APIFailure.unauthorized
        }
    }

    /// The transaction id that ends `request`'s path after `prefix`: digits only.
    static func transactionID(_ request: HTTPRequest, after prefix: String) throws -> String {
        let id = String(request.path.dropFirst(prefix.count))
        guard !id.isEmpty, !id.contains("/") else { throw AppleSimAPI.APIFailure.notFound }
        guard id.allSatisfy(\.isASCII), id.allSatisfy(\.isNumber) else {
            throw AppleSimAPI.APIFailure.apple(400, 4_000_006, "Invalid transaction id.")
        }
        return id
    }

    /// One page of Get Transaction History over `signed` (oldest first), `pageSize` a page;
    /// `revision` is the index of the next page's first transaction.
    static func historyPage(
        _ signed: [String], _ request: HTTPRequest, pageSize: Int, bundleID: String, appAppleID: Int64,
        environment: String
    ) throws -> [String: any Sendable] {
        let start = request.query["revision"].map { Int($0) ?? -1 } ?? 0
        guard (0...signed.count).contains(start) else {
            throw AppleSimAPI.APIFailure.apple(400, 4_000_005, "Invalid revision.")
        }
        let end = min(signed.count, start + pageSize)
        return [
            "revision": String(end), "hasMore": end < signed.count, "bundleId": bundleID, "appAppleId": appAppleID,
            "environment": environment, "signedTransactions": Array(signed[start..<end]),
        ]
    }
}
