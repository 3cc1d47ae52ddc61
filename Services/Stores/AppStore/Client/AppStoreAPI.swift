public import Foundation
public import HTTPClient

/// The App Store Server API calls the verifier makes. `AppStoreServerAPIClient` implements it
/// over HTTPS; tests and the ingress pipeline may use any other implementation.
public protocol AppStoreAPI: Sendable {
    /// `GET /inApps/v1/transactions/{transactionId}`: the signed transaction (JWS).
    func transactionInfo(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> String
    /// `GET /inApps/v1/subscriptions/{transactionId}`: every subscription group's latest state.
    func allSubscriptionStatuses(transactionID: String, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> AppleSubscriptionStatuses
    /// `GET /inApps/v2/history/{transactionId}`, every page: all signed transactions.
    func transactionHistory(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> [String]
    /// `POST /inApps/v1/notifications/history`, every page, for notifications sent in
    /// [`start`, `end`): their signed payloads, oldest first as Apple lists them.
    func notificationHistory(start: Date, end: Date, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> [AppleNotificationHistoryItem]
    /// `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`.
    func setAppAccountToken(originalTransactionID: String, appAccountToken: String, environment: AppleEnvironment)
        async throws(AppStoreAPIError)
    /// `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`: moves the subscription's
    /// renewal date later.
    func extendRenewalDate(
        originalTransactionID: String, _ request: AppleRenewalExtensionRequest, environment: AppleEnvironment
    ) async throws(AppStoreAPIError) -> AppleRenewalExtension
    /// `GET /inApps/v2/refund/lookup/{transactionId}`, every page: the signed transactions of
    /// every refund of the customer, in Apple's order (by revocation date).
    func refundHistory(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> [String]
    /// `POST /inApps/v1/subscriptions/extend/mass`: asks Apple to extend every eligible
    /// subscriber of a product, which it does over time; answers the `requestIdentifier`.
    func massExtendRenewalDate(_ request: AppleMassExtensionRequest, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> String
    /// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`: how far a
    /// mass extension has come.
    func massExtensionStatus(productID: String, requestIdentifier: String, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> AppleMassExtensionStatus
    /// `PUT /inApps/v2/transactions/consumption/{transactionId}`: answers a CONSUMPTION_REQUEST
    /// (Apple answers 202 Accepted).
    func sendConsumptionInformation(
        transactionID: String, _ request: AppleConsumptionInformation, environment: AppleEnvironment
    ) async throws(AppStoreAPIError)
    /// `GET /inApps/v1/lookup/{orderId}` (production only: Apple does not serve it in the
    /// sandbox): the signed transactions of a customer's order, empty when Apple answers the
    /// order id invalid (`status` 1).
    func lookUpOrderID(_ orderID: String) async throws(AppStoreAPIError) -> [String]
}

/// The body of Send Consumption Information (`ConsumptionRequest`, App Store Server API 1.19).
public struct AppleConsumptionInformation: Sendable, Hashable, Codable {
    /// Apple refuses anything but true (4000035).
    public var customerConsented: Bool
    /// Milliunits consumed, 0 to 100000; left out for an auto-renewable subscription.
    public var consumptionPercentage: Int?
    /// `DELIVERED`, `UNDELIVERED_QUALITY_ISSUE`, `UNDELIVERED_WRONG_ITEM`,
    /// `UNDELIVERED_SERVER_OUTAGE` or `UNDELIVERED_OTHER`.
    public var deliveryStatus: String
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`; left out for none.
    public var refundPreference: String?
    public var sampleContentProvided: Bool

    /// Apple's `deliveryStatus` values.
    public static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
        "UNDELIVERED_OTHER",
    ]
    /// Apple's `refundPreference` values.
    public static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    public init(
        customerConsented: Bool, consumptionPercentage: Int?, deliveryStatus: String, refundPreference: String?,
        sampleContentProvided: Bool
    ) {
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}

/// The body of Extend Subscription Renewal Dates for All Active Subscribers
/// (`MassExtendRenewalDateRequest`).
public struct AppleMassExtensionRequest: Sendable, Hashable, Codable {
    /// Days to extend by, 1 to 90.
    public var extendByDays: Int
    /// 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int
    /// The caller's id of this request (at most 128 characters).
    public var requestIdentifier: String
    /// Storefront country codes (ISO 3166-1 alpha-3) to limit it to; nil (left out) means every
    /// storefront: Apple refuses an empty list.
    public var storefrontCountryCodes: [String]?
    public var productId: String

    public init(
        extendByDays: Int, extendReasonCode: Int, requestIdentifier: String, storefrontCountryCodes: [String]?,
        productId: String
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.productId = productId
    }
}

/// The answer of Get Status of Subscription Renewal Date Extensions
/// (`MassExtendRenewalDateStatusResponse`).
public struct AppleMassExtensionStatus: Sendable, Hashable, Decodable {
    public var requestIdentifier: String?
    /// True when Apple has finished the request.
    public var complete: Bool?
    /// When it finished, epoch ms.
    public var completeDate: Int64?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    public init(
        requestIdentifier: String?, complete: Bool?, completeDate: Int64?, succeededCount: Int64?, failedCount: Int64?
    ) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// The body of Extend a Subscription Renewal Date (`ExtendRenewalDateRequest`).
public struct AppleRenewalExtensionRequest: Sendable, Hashable, Codable {
    /// Days to extend by, 1 to 90.
    public var extendByDays: Int
    /// 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int
    /// The caller's id of this extension (at most 128 characters).
    public var requestIdentifier: String

    public init(extendByDays: Int, extendReasonCode: Int, requestIdentifier: String) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}

/// The answer of Extend a Subscription Renewal Date (`ExtendRenewalDateResponse`).
public struct AppleRenewalExtension: Sendable, Hashable, Decodable {
    /// The new `expiresDate`, epoch ms.
    public var effectiveDate: Int64?
    public var originalTransactionId: String?
    public var success: Bool?
    public var webOrderLineItemId: String?

    public init(effectiveDate: Int64?, originalTransactionId: String?, success: Bool?, webOrderLineItemId: String?) {
        self.effectiveDate = effectiveDate
        self.originalTransactionId = originalTransactionId
        self.success = success
        self.webOrderLineItemId = webOrderLineItemId
    }
}

/// The body of Get All Subscription Statuses (`StatusResponse`).
public struct AppleSubscriptionStatuses: Sendable, Hashable, Decodable {
    public var environment: String?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [Group]

    /// One subscription group (`SubscriptionGroupIdentifierItem`).
    public struct Group: Sendable, Hashable, Decodable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]

        public init(subscriptionGroupIdentifier: String?, lastTransactions: [LastTransaction]) {
            self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
            self.lastTransactions = lastTransactions
        }
    }

    /// The latest transaction of one subscription in the group (`LastTransactionsItem`).
    public struct LastTransaction: Sendable, Hashable, Decodable {
        /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int?
        public var originalTransactionId: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?

        public init(
            status: Int?, originalTransactionId: String?, signedTransactionInfo: String?, signedRenewalInfo: String?
        ) {
            self.status = status
            self.originalTransactionId = originalTransactionId
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
        }
    }

    public init(environment: String?, bundleId: String?, appAppleId: Int64?, data: [Group]) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}

/// One entry of Get Notification History (`NotificationHistoryResponseItem`).
public struct AppleNotificationHistoryItem: Sendable, Hashable, Decodable {
    public var signedPayload: String
    public init(signedPayload: String) { self.signedPayload = signedPayload }
}

/// Why an App Store Server API call failed. Never contains the bearer token or a signed payload.
public struct AppStoreAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The codes both store API clients share (`StoreAPIErrorCode`); `wrongEnvironment` is the
    /// App Store's error 4040010 (the transaction id is not found in this environment: it may
    /// belong to the other one).
    public typealias Code = StoreAPIErrorCode

    public let code: Code
    /// Apple's `errorCode` from the body, when it sent one (such as 4040010).
    public let apiErrorCode: Int?
    /// The HTTP status, when there was an answer.
    public let httpStatus: Int?
    public let message: String
    /// How long Apple asked to wait (`Retry-After`), when it answered 429 or 5xx with one.
    public let retryAfter: Duration?

    public init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, apiErrorCode: Int? = nil, retryAfter: Duration? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.apiErrorCode = apiErrorCode
        self.retryAfter = retryAfter
    }

    /// Whether trying again later may succeed (rate limits, server errors, network failures).
    public var isRetryable: Bool { code.isRetryable }

    public var description: String {
        var text = "App Store Server API: \(code)"
        if let httpStatus { text += " (HTTP \(httpStatus)" + (apiErrorCode.map { ", error \($0)" } ?? "") + ")" }
        return text + ": " + message
    }
}
