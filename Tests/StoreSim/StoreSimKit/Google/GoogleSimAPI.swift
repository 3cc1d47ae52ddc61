public import Crypto
public import Foundation
public import HTTP

/// Google's side of the wire for a `GoogleSimStore`: the OAuth token endpoint that takes a
/// service account's RS256 assertion, the Play Developer API endpoints the verifier calls behind
/// the access tokens it hands out (`subscriptionsv2.get`, subscription and product
/// `:acknowledge`, `products.get`, `:consume`, `voidedpurchases.list`, and the calls that change
/// a purchase: `subscriptionsv2` `:revoke` and `:cancel`, `subscriptions` `:defer`,
/// `orders` `:refund`), the JWKS of the key that
/// signs Pub/Sub push tokens, and the push tokens themselves.
public final class GoogleSimAPI: Sendable {
    /// The service account the verifier authenticates as, and the push identity.
    public struct Identity: Sendable {
        public let serviceAccountEmail: String
        public let serviceAccountKey: PublicKey
        /// The `aud` of assertions: the token URL as the service account file names it.
        public let tokenURL: String
        public let pushServiceAccount: String
        public let pushAudience: String
        public let pushKey: PrivateKey
        public let pushKeyID: String

        public init(
            serviceAccountEmail: String, serviceAccountKey: PublicKey, tokenURL: String, pushServiceAccount: String,
            pushAudience: String, pushKey: PrivateKey, pushKeyID: String
        ) {
            self.serviceAccountEmail = serviceAccountEmail
            self.serviceAccountKey = serviceAccountKey
            self.tokenURL = tokenURL
            self.pushServiceAccount = pushServiceAccount
            self.pushAudience = pushAudience
            self.pushKey = pushKey
            self.pushKeyID = pushKeyID
        }
    }

    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// How far back `voidedpurchases.list` may start (Google refuses an older `startTime`).
    public static let voidedLookback: Int64 = 30 * 86_400_000
    public let store: GoogleSimStore
    public let identity: Identity
    /// Failures to answer instead, for a while.
    public let faults = APIFaults()
    private let wallClock: @Sendable () -> Date
    private let accessTokens = GoogleAPICall.AccessTokens()

    public init(store: GoogleSimStore, identity: Identity, wallClock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.identity = identity
        self.wallClock = wallClock
    }

    /// The JWKS document of the push signing key.
    public var jwks: [UInt8] { GoogleAPICall.jwks(identity) }

    /// Registers the token endpoint, the JWKS and the Play Developer API on `server`.
    public func register(on server: HTTPServer) {
        server.route("POST", "/token") { [self] request in
            GoogleAPICall.token(request, identity: identity, tokens: accessTokens, now: wallClock())
        }
        server.route("GET", "/google/jwks") { [self] _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: jwks)
        }
        let application = "/androidpublisher/v3/applications/\(store.configuration.packageName)/purchases"
        server.route("GET", "\(application)/subscriptionsv2/tokens/*") { [self] request in
            authorized(request) {
                let token = try GoogleAPICall.segment(request.path, after: "\(application)/subscriptionsv2/tokens/")
                return try store.subscriptionV2(token)
            }
        }
        server.route("POST", "\(application)/subscriptions/*") { [self] request in
            authorized(request) {
                let call = try GoogleAPICall.tokenAction(request.path, after: "\(application)/subscriptions/")
                switch call.verb {
                case "acknowledge": try store.acknowledge(call.token, productID: call.product)
                case "defer": return try deferRenewal(request, product: call.product, token: call.token)
                default: throw GoogleAPICall.Failure.google(404, "NOT_FOUND", "Not found.")
                }
                return nil
            }
        }
        server.route("GET", "\(application)/products/*") { [self] request in
            authorized(request) {
                let call = try GoogleAPICall.productToken(request.path, after: "\(application)/products/")
                return try store.productPurchase(call.token, productID: call.product)
            }
        }
        server.route("POST", "\(application)/products/*") { [self] request in
            authorized(request) {
                let call = try GoogleAPICall.tokenAction(request.path, after: "\(application)/products/")
                switch call.verb {
                case "acknowledge": try store.acknowledgeProduct(call.token, productID: call.product)
                case "consume": try store.consumeProduct(call.token, productID: call.product)
                default: throw GoogleAPICall.Failure.google(404, "NOT_FOUND", "Not found.")
                }
                return nil
            }
        }
        server.route("GET", "\(application)/voidedpurchases") { [self] request in
            authorized(request) { try voided(request) }
        }
        registerActions(
            on: server, application: "/androidpublisher/v3/applications/\(store.configuration.packageName)")
    }

    /// A Pub/Sub push body and its OIDC bearer token for a message of the store.
    public func push(_ message: GoogleSimStore.Message) throws(CryptoError) -> (body: Data, bearer: String) {
        try GoogleAPICall.push(
            notification: message.notification, messageID: message.id, publishTime: message.eventTime,
            identity: identity, now: wallClock())
    }

    // MARK: Play Developer API

    func authorized(_ request: HTTPRequest, _ body: () throws -> [String: any Sendable]?) -> HTTPResponse {
        GoogleAPICall.answer(request, tokens: accessTokens, faults: faults, now: wallClock()) {
            try GoogleAPICall.json(try body())
        }
    }

    /// Voided purchases in [startTime, endTime] (epoch ms; default the last 30 days, no earlier
    /// start allowed), `maxResults` a page (at most 1000) behind `token`. Without `type=1` only
    /// one-time products are listed; quantity-based partial refunds only with
    /// `includeQuantityBasedPartialRefund=true`, and only they carry `voidedQuantity`.
    private func voided(_ request: HTTPRequest) throws -> [String: any Sendable] {
        let now = store.clock.now
        func milliseconds(_ name: String) throws -> Int64? {
            guard let text = request.query[name] else { return nil }
            guard let value = Int64(text) else {
                throw GoogleAPICall.Failure.google(400, "INVALID_ARGUMENT", "Invalid value for \(name): \(text)")
            }
            return value
        }
        let start = try milliseconds("startTime") ?? now - Self.voidedLookback
        let end = try milliseconds("endTime") ?? now
        // Google ignores startTime once a page token is given; the first page must keep to 30 days.
        if request.query["token"] == nil, start < now - Self.voidedLookback {
            throw GoogleAPICall.Failure.google(
                400, "INVALID_ARGUMENT", "startTime is too far in the past: at most 30 days ago is allowed.")
        }
        guard start <= end else {
            throw GoogleAPICall.Failure.google(400, "INVALID_ARGUMENT", "startTime must not be after endTime.")
        }
        let size = min(1000, max(1, request.query["maxResults"].flatMap { Int($0) } ?? 1000))
        let subscriptions = request.query["type"] == "1"
        let partial = request.query["includeQuantityBasedPartialRefund"] == "true"
        let all = store.voided(from: start, to: end).filter {
            (subscriptions || $0.productType == 2) && (partial || $0.refundType == 1)
        }
        let offset = request.query["token"].map { Int($0) ?? -1 } ?? 0
        guard (0...all.count).contains(offset) else {
            throw GoogleAPICall.Failure.google(400, "INVALID_ARGUMENT", "Invalid pagination token.")
        }
        let next = min(all.count, offset + size)
        var answer: [String: any Sendable] = [:]
        // An empty page has no voidedPurchases at all, as Google answers it.
        if next > offset {
            answer["voidedPurchases"] = all[offset..<next].map { entry -> [String: any Sendable] in
                var fields: [String: any Sendable] = [
                    "kind": "androidpublisher#voidedPurchase", "purchaseToken": entry.token,
                    "purchaseTimeMillis": String(entry.purchaseTime), "voidedTimeMillis": String(entry.voidedTime),
                    "orderId": entry.orderID, "voidedSource": entry.source, "voidedReason": entry.reason,
                ]
                if let quantity = entry.voidedQuantity { fields["voidedQuantity"] = quantity }
                return fields
            }
        }
        if next < all.count {
            answer["tokenPagination"] = ["nextPageToken": String(next)] as [String: any Sendable]
        }
        return answer
    }
}
