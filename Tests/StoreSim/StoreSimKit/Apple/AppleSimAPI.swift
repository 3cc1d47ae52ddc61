public import Crypto
public import Foundation
public import HTTP

/// The App Store Server API endpoints the verifier calls, served from an `AppleSimStore` over a
/// real HTTP server: the same paths, JSON and error codes as Apple's, behind a bearer JWT that
/// must be an ES256 token signed by the configured App Store Connect key.
public struct AppleSimAPI: Sendable {
    /// Who may call: the App Store Connect key the verifier signs its tokens with.
    public struct Credentials: Sendable {
        public let keyID: String
        public let issuerID: String
        public let publicKey: PublicKey

        public init(keyID: String, issuerID: String, publicKey: PublicKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.publicKey = publicKey
        }
    }

    public let store: AppleSimStore
    public let credentials: Credentials
    /// Failures to answer instead, for a while.
    public let faults = APIFaults()
    /// Wall-clock time for token expiry (tokens are signed with the caller's clock, not the
    /// simulator's).
    public let wallClock: @Sendable () -> Date
    /// Transactions in one page of transaction history unless told otherwise (Apple's page size).
    public static let historyPageSize = 20
    /// Transactions in one page of this API's transaction history (small ones make callers page).
    public let pageSize: Int

    public init(
        store: AppleSimStore, credentials: Credentials, wallClock: @escaping @Sendable () -> Date = { Date() },
        historyPageSize: Int = AppleSimAPI.historyPageSize
    ) {
        self.store = store
        self.credentials = credentials
        self.wallClock = wallClock
        pageSize = max(1, historyPageSize)
    }

    /// Registers the endpoints on `server`.
    public func register(on server: HTTPServer) {
        server.route("GET", "/inApps/v1/subscriptions/*") { request in
            authorized(request) { try store.statuses(lastSegment(request, after: "/inApps/v1/subscriptions/")) }
        }
        server.route("GET", "/inApps/v1/transactions/*") { request in
            authorized(request) {
                [
                    "signedTransactionInfo": try store.signedTransaction(
                        lastSegment(request, after: "/inApps/v1/transactions/"))
                ]
            }
        }
        server.route("PUT", "/inApps/v1/transactions/*") { request in
            authorized(request) {
                let rest = request.path.dropFirst("/inApps/v1/transactions/".count)
                guard rest.hasSuffix("/appAccountToken"), let id = rest.split(separator: "/").first,
                    rest.split(separator: "/").count == 2
                else { throw APIFailure.notFound }
                guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
                    let token = body["appAccountToken"] as? String
                else { throw APIFailure.apple(400, 4_000_000, "Bad request.") }
                guard UUID(uuidString: token) != nil else {
                    throw APIFailure.apple(400, 4_000_183, "Invalid appAccountToken.")
                }
                try store.setAppAccountToken(String(id), token)
                return nil
            }
        }
        server.route("PUT", "/inApps/v1/subscriptions/extend/*") { request in
            authorized(request) { try extendRenewal(request) }
        }
        server.route("POST", "/inApps/v1/subscriptions/extend/mass") { request in
            authorized(request) { try massExtend(request) }
        }
        server.route("GET", "/inApps/v1/subscriptions/extend/mass/*") { request in
            authorized(request) { try massExtensionStatus(request) }
        }
        server.route("PUT", "/inApps/v2/transactions/consumption/*") { request in
            // Apple answers 202 Accepted with no body.
            let answer = authorized(request) { try consumption(request) }
            return answer.status == 200 ? HTTPResponse(status: 202) : answer
        }
        server.route("GET", "/inApps/v2/history/*") { request in
            authorized(request) { try history(request) }
        }
        server.route("GET", "/inApps/v2/refund/lookup/*") { request in
            authorized(request) { try refundHistory(request) }
        }
        // Look Up Order ID: `{status: 0, signedTransactions}` for an order of this app, `{status: 1}`
        // (no signedTransactions) for any other order id.
        server.route("GET", "/inApps/v1/lookup/*") { request in
            authorized(request) {
                let orderID = String(request.path.dropFirst("/inApps/v1/lookup/".count))
                guard !orderID.isEmpty, !orderID.contains("/") else { throw APIFailure.notFound }
                guard let signed = try store.orderTransactions(orderID) else { return ["status": 1] }
                return ["status": 0, "signedTransactions": signed]
            }
        }
        server.route("POST", "/inApps/v1/notifications/history") { request in
            authorized(request) { try notificationHistory(request) }
        }
    }

    /// What went wrong with a call, as Apple answers it.
    enum APIFailure: Error {
        case unauthorized
        case notFound
        case apple(Int, Int, String)
    }

    private func authorized(_ request: HTTPRequest, _ body: () throws -> [String: any Sendable]?) -> HTTPResponse {
        AppleAPICall.answer(
            request, credentials: credentials, bundleID: store.configuration.bundleID, faults: faults, now: wallClock(),
            body)
    }

    static func error(_ status: Int, _ code: Int, _ message: String) -> HTTPResponse {
        AppleAPICall.error(status, code, message)
    }

    private func lastSegment(_ request: HTTPRequest, after prefix: String) throws -> String {
        try AppleAPICall.transactionID(request, after: prefix)
    }

    /// Extend a Subscription Renewal Date: `{extendByDays, extendReasonCode, requestIdentifier}`
    /// in, `{effectiveDate, originalTransactionId, success, webOrderLineItemId}` out, refusals
    /// with Apple's error codes.
    private func extendRenewal(_ request: HTTPRequest) throws -> [String: any Sendable] {
        let id = try lastSegment(request, after: "/inApps/v1/subscriptions/extend/")
        let (_, days, reason, requestID) = try Self.extensionFields(request)
        do throws(AppleSimStore.ExtensionRefusal) {
            let extended = try store.extend(id, days: days, reason: reason, requestIdentifier: requestID)
            return [
                "effectiveDate": extended.effectiveDate, "originalTransactionId": extended.originalTransactionID,
                "success": true, "webOrderLineItemId": extended.webOrderLineItemID,
            ]
        } catch {
            switch error {
            case .badDays: throw APIFailure.apple(400, 4_000_009, "Invalid extend by days value.")
            case .badReason: throw APIFailure.apple(400, 4_000_010, "Invalid extend reason code.")
            case .notOriginal: throw APIFailure.apple(404, 4_040_005, "Original transaction id not found.")
            case .familyShared:
                throw APIFailure.apple(
                    403, 4_030_007, "Forbidden - family-shared subscription ineligible for extension.")
            case .ineligible:
                throw APIFailure.apple(403, 4_030_004, "Forbidden - subscription state ineligible for extension.")
            case .maximumReached:
                throw APIFailure.apple(403, 4_030_005, "Forbidden - subscription has reached maximum extension count.")
            }
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: `{extendByDays,
    /// extendReasonCode, requestIdentifier, storefrontCountryCodes?, productId}` in,
    /// `{requestIdentifier}` out; Apple's error codes for each field it refuses.
    private func massExtend(_ request: HTTPRequest) throws -> [String: any Sendable] {
        let (body, days, reason, requestID) = try Self.extensionFields(request)
        guard let productID = body["productId"] as? String, !productID.isEmpty else {
            throw APIFailure.apple(400, 4_000_023, "Invalid product id.")
        }
        var storefronts: [String]?
        if let value = body["storefrontCountryCodes"] {
            guard let codes = value as? [String] else {
                throw APIFailure.apple(400, 4_000_028, "Invalid storefront country code.")
            }
            guard !codes.isEmpty else {
                throw APIFailure.apple(400, 4_000_027, "Empty storefront country code list.")
            }
            for code in codes
            where code.utf8.count != 3 || !code.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) {
                throw APIFailure.apple(400, 4_000_028, "Invalid storefront country code.")
            }
            storefronts = codes
        }
        do throws(AppleSimStore.MassExtensionRefusal) {
            try store.startMassExtension(
                productID: productID, days: days, reason: reason, requestIdentifier: requestID,
                storefronts: storefronts)
        } catch {
            throw Self.failure(error)
        }
        return ["requestIdentifier": requestID]
    }

    /// Get Status of Subscription Renewal Date Extensions: `{requestIdentifier, complete,
    /// completeDate (once complete), succeededCount, failedCount}`; 4040009 for a request it
    /// does not know.
    private func massExtensionStatus(_ request: HTTPRequest) throws -> [String: any Sendable] {
        let rest = request.path.dropFirst("/inApps/v1/subscriptions/extend/mass/".count).split(
            separator: "/", omittingEmptySubsequences: false)
        guard rest.count == 2, !rest[0].isEmpty, !rest[1].isEmpty,
            let productID = String(rest[0]).removingPercentEncoding,
            let requestID = String(rest[1]).removingPercentEncoding
        else { throw APIFailure.notFound }
        do throws(AppleSimStore.MassExtensionRefusal) {
            let status = try store.massExtensionStatus(productID: productID, requestIdentifier: requestID)
            var answer: [String: any Sendable] = [
                "requestIdentifier": status.requestIdentifier, "complete": status.complete,
                "succeededCount": status.succeededCount, "failedCount": status.failedCount,
            ]
            if let date = status.completeDate { answer["completeDate"] = date }
            return answer
        } catch {
            throw Self.failure(error)
        }
    }

    /// Send Consumption Information (`ConsumptionRequest`, API 1.19): `customerConsented` must be
    /// true (4000035), `deliveryStatus` one of Apple's (4000036), `sampleContentProvided` a Boolean
    /// (4000041), `consumptionPercentage` 0 to 100000 and `refundPreference` one of Apple's when
    /// present (the general 4000000 here: the simulator does not tell those two apart).
    private func consumption(_ request: HTTPRequest) throws -> [String: any Sendable]? {
        let id = try lastSegment(request, after: "/inApps/v2/transactions/consumption/")
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            throw APIFailure.apple(400, 4_000_000, "Bad request.")
        }
        guard let consented = body["customerConsented"] as? Bool, consented else {
            throw APIFailure.apple(400, 4_000_035, "Invalid customer consented.")
        }
        let deliveryStatuses: Set<String> = [
            "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
            "UNDELIVERED_OTHER",
        ]
        guard let delivery = body["deliveryStatus"] as? String, deliveryStatuses.contains(delivery) else {
            throw APIFailure.apple(400, 4_000_036, "Invalid delivery status.")
        }
        guard let sample = body["sampleContentProvided"] as? Bool else {
            throw APIFailure.apple(400, 4_000_041, "Invalid sample content provided.")
        }
        var fields = ["deliveryStatus": delivery, "sampleContentProvided": String(sample)]
        if let value = body["consumptionPercentage"] {
            guard let percentage = (value as? NSNumber)?.intValue, (0...100_000).contains(percentage) else {
                throw APIFailure.apple(400, 4_000_000, "Bad request.")
            }
            fields["consumptionPercentage"] = String(percentage)
        }
        if let value = body["refundPreference"] {
            guard let preference = value as? String, ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(preference)
            else { throw APIFailure.apple(400, 4_000_000, "Bad request.") }
            fields["refundPreference"] = preference
        }
        try store.answerConsumption(id, fields)
        return nil
    }

    /// The JSON body of an extension request and its `extendByDays`, `extendReasonCode` and
    /// `requestIdentifier` (at most 128 characters), each refused with Apple's error code.
    private static func extensionFields(_ request: HTTPRequest) throws -> (
        body: [String: Any], days: Int, reason: Int, requestID: String
    ) {
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            throw APIFailure.apple(400, 4_000_000, "Bad request.")
        }
        guard let days = (body["extendByDays"] as? NSNumber)?.intValue else {
            throw APIFailure.apple(400, 4_000_009, "Invalid extend by days value.")
        }
        guard let reason = (body["extendReasonCode"] as? NSNumber)?.intValue else {
            throw APIFailure.apple(400, 4_000_010, "Invalid extend reason code.")
        }
        guard let requestID = body["requestIdentifier"] as? String, !requestID.isEmpty, requestID.utf8.count <= 128
        else { throw APIFailure.apple(400, 4_000_011, "Invalid request identifier.") }
        return (body, days, reason, requestID)
    }

    private static func failure(_ refusal: AppleSimStore.MassExtensionRefusal) -> APIFailure {
        switch refusal {
        case .badDays: .apple(400, 4_000_009, "Invalid extend by days value.")
        case .badReason: .apple(400, 4_000_010, "Invalid extend reason code.")
        case .badProduct: .apple(400, 4_000_023, "Invalid product id.")
        case .notFound: .apple(404, 4_040_009, "Status request not found.")
        }
    }

    /// Transaction history, oldest first, `pageSize` a page; `revision` is the index of
    /// the next page's first transaction.
    private func history(_ request: HTTPRequest) throws -> [String: any Sendable] {
        try AppleAPICall.historyPage(
            store.history(lastSegment(request, after: "/inApps/v2/history/")), request, pageSize: pageSize,
            bundleID: store.configuration.bundleID, appAppleID: store.configuration.appAppleID,
            environment: store.configuration.environment)
    }

    /// Get Refund History: the refunded transactions by revocation date, 20 a page behind
    /// `revision` (Apple's page size), paged as transaction history is; the page carries only
    /// `signedTransactions`, `revision` and `hasMore` (`RefundHistoryResponse`).
    private func refundHistory(_ request: HTTPRequest) throws -> [String: any Sendable] {
        var page = try AppleAPICall.historyPage(
            store.refundHistory(lastSegment(request, after: "/inApps/v2/refund/lookup/")), request,
            pageSize: Self.historyPageSize, bundleID: store.configuration.bundleID,
            appAppleID: store.configuration.appAppleID, environment: store.configuration.environment)
        for key in ["bundleId", "appAppleId", "environment"] { page[key] = nil }
        return page
    }

    /// Notifications sent in [startDate, endDate), optionally for one transaction's
    /// subscription, 20 a page behind `paginationToken`.
    private func notificationHistory(_ request: HTTPRequest) throws -> [String: any Sendable] {
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            throw APIFailure.apple(400, 4_000_000, "Bad request.")
        }
        guard let start = (body["startDate"] as? NSNumber)?.int64Value else {
            throw APIFailure.apple(400, 4_000_015, "Invalid start date.")
        }
        guard let end = (body["endDate"] as? NSNumber)?.int64Value else {
            throw APIFailure.apple(400, 4_000_016, "Invalid end date.")
        }
        guard start < end else { throw APIFailure.apple(400, 4_000_013, "Start date must be before end date.") }
        var original: String?
        if let transactionID = body["transactionId"] as? String {
            guard let found = store.originalTransactionID(of: transactionID) else { throw APIFailure.notFound }
            original = found
        }
        let matching = store.sentNotifications.filter {
            $0.signedDate >= start && $0.signedDate < end && (original == nil || $0.originalTransactionID == original)
        }
        let offset = request.query["paginationToken"].map { Int($0) ?? -1 } ?? 0
        guard (0...matching.count).contains(offset) else {
            throw APIFailure.apple(400, 4_000_014, "Invalid pagination token.")
        }
        let next = min(matching.count, offset + 20)
        var answer: [String: any Sendable] = [
            "hasMore": next < matching.count,
            "notificationHistory": matching[offset..<next].map {
                ["signedPayload": $0.signedPayload, "sendAttempts": [] as [String]] as [String: any Sendable]
            },
        ]
        if next < matching.count { answer["paginationToken"] = String(next) }
        return answer
    }
}
