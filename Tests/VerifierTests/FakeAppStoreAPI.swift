import AppStore
import Crypto
import Foundation
import HTTPClient
import Synchronization

/// An in-memory App Store for the adapter: subscriptions it signs fresh on every call with a
/// generated Apple-shaped chain, notification history, and a switch that makes every call fail
/// as a network outage would.
final class FakeAppStoreAPI: AppStoreAPI {
    struct Purchase: Sendable {
        var transaction: [String: any Sendable]
        var renewal: [String: any Sendable]?
        var status: Int?
    }

    private struct State {
        var purchases: [String: Purchase] = [:]
        var history: [String] = []
        var failing = false
        var calls: [String] = []
        var fallsBack = true
        var actionRefusal: AppStoreAPIError?
        /// Order ids, each with the original transaction ids of its purchases.
        var orders: [String: [String]] = [:]
        /// Calls (by their `calls` name prefix) to hold after they have begun.
        var holds: [String: FakeGooglePlayAPI.Gate] = [:]
    }

    let chain: AppleSigningChain
    let now: @Sendable () -> Date
    private let state = Mutex(State())

    init(chain: AppleSigningChain, now: @escaping @Sendable () -> Date) {
        self.chain = chain
        self.now = now
    }

    /// Sets what the API answers for `originalTransactionID`.
    func set(_ originalTransactionID: String, _ purchase: Purchase) {
        state.withLock { $0.purchases[originalTransactionID] = purchase }
    }

    func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }

    /// Makes `orderID` an order of the purchases `originalTransactionIDs` (Look Up Order ID).
    func setOrder(_ orderID: String, _ originalTransactionIDs: [String]) {
        state.withLock { $0.orders[orderID] = originalTransactionIDs }
    }

    /// Whether a transaction id not in the environment asked is looked for in the other one,
    /// as the client does with `fallBackToOtherEnvironment` (the default here): found there, it
    /// is answered; found nowhere, it is `.notFound` (4040010). Without, an id not in the
    /// environment asked (a purchase's is its transaction's `environment`) is
    /// `.wrongEnvironment` (4040010), wherever it is.
    func setFallsBack(_ fallsBack: Bool) { state.withLock { $0.fallsBack = fallsBack } }
    /// The next call whose name starts with `prefix` (only `allSubscriptionStatuses`) waits for
    /// the gate before it answers: processing held.
    func hold(_ prefix: String) -> FakeGooglePlayAPI.Gate {
        let gate = FakeGooglePlayAPI.Gate()
        state.withLock { $0.holds[prefix] = gate }
        return gate
    }

    private func held(_ call: String) async {
        let gate = state.withLock { state -> FakeGooglePlayAPI.Gate? in
            guard let prefix = state.holds.keys.first(where: { call.hasPrefix($0) }) else { return nil }
            return state.holds.removeValue(forKey: prefix)
        }
        await gate?.wait()
    }

    func addHistory(_ signedPayload: String) { state.withLock { $0.history.append(signedPayload) } }
    var calls: [String] { state.withLock { $0.calls } }

    private func begin(_ call: String) throws(AppStoreAPIError) {
        let failing = state.withLock { state -> Bool in
            state.calls.append(call)
            return state.failing
        }
        if failing { throw AppStoreAPIError(.network, "connection refused") }
    }

    private func signed(_ payload: [String: any Sendable]) throws(AppStoreAPIError) -> String {
        var payload = payload
        payload["signedDate"] = Int64(now().timeIntervalSince1970 * 1000)
        do {
            return try chain.sign(payload)
        } catch {
            throw AppStoreAPIError(.invalidResponse, "cannot sign: \(error)")
        }
    }

    private func purchase(_ id: String, _ environment: AppleEnvironment) throws(AppStoreAPIError) -> Purchase {
        let (found, fallsBack) = state.withLock { state in
            (
                state.purchases[id]
                    ?? state.purchases.values.first { ($0.transaction["transactionId"] as? String) == id },
                state.fallsBack
            )
        }
        if let found, fallsBack || (found.transaction["environment"] as? String) == environment.rawValue {
            return found
        }
        throw AppStoreAPIError(
            fallsBack ? .notFound : .wrongEnvironment, "unknown transaction", httpStatus: 404, apiErrorCode: 4_040_010)
    }

    func transactionInfo(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError) -> String
    {
        try begin("transactionInfo \(transactionID)")
        return try signed(try purchase(transactionID, environment).transaction)
    }

    func allSubscriptionStatuses(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> AppleSubscriptionStatuses
    {
        try begin("allSubscriptionStatuses \(transactionID)")
        await held("allSubscriptionStatuses \(transactionID)")
        let found = try purchase(transactionID, environment)
        let last = AppleSubscriptionStatuses.LastTransaction(
            status: found.status, originalTransactionId: found.transaction["originalTransactionId"] as? String,
            signedTransactionInfo: try signed(found.transaction),
            signedRenewalInfo: try found.renewal.map { (renewal) throws(AppStoreAPIError) in try signed(renewal) })
        return AppleSubscriptionStatuses(
            environment: environment.rawValue, bundleId: found.transaction["bundleId"] as? String, appAppleId: nil,
            data: [.init(subscriptionGroupIdentifier: "21000001", lastTransactions: [last])])
    }

    func transactionHistory(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> [String]
    {
        try begin("transactionHistory \(transactionID)")
        let all = state.withLock { Array($0.purchases.values) }
        var result: [String] = []
        for purchase in all { result.append(try signed(purchase.transaction)) }
        return result
    }

    func notificationHistory(start: Date, end: Date, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> [AppleNotificationHistoryItem]
    {
        // The window, in ms since 1970, so that a test can check what was asked for.
        try begin(
            "notificationHistory \(Int64(start.timeIntervalSince1970 * 1000))...\(Int64(end.timeIntervalSince1970 * 1000))"
        )
        return state.withLock { $0.history }.map(AppleNotificationHistoryItem.init(signedPayload:))
    }

    func setAppAccountToken(originalTransactionID: String, appAccountToken: String, environment: AppleEnvironment)
        async throws(AppStoreAPIError)
    {
        try begin("setAppAccountToken \(originalTransactionID)")
        _ = try purchase(originalTransactionID, environment)
        state.withLock { state in
            state.purchases[originalTransactionID]?.transaction["appAccountToken"] = appAccountToken
            state.purchases[originalTransactionID]?.renewal?["appAccountToken"] = appAccountToken
        }
    }

    /// Moves the purchase's `expiresDate` (its renewal info's `renewalDate` too) by the days
    /// asked, or throws the refusal set with `refuseActions`.
    func extendRenewalDate(
        originalTransactionID: String, _ request: AppleRenewalExtensionRequest, environment: AppleEnvironment
    ) async throws(AppStoreAPIError) -> AppleRenewalExtension {
        try begin("extendRenewalDate \(originalTransactionID) \(request.extendByDays)")
        if let refusal = state.withLock({ $0.actionRefusal }) { throw refusal }
        _ = try purchase(originalTransactionID, environment)
        let expires = state.withLock { state -> Int64 in
            let old = state.purchases[originalTransactionID]?.transaction["expiresDate"] as? Int64 ?? 0
            let new = old + Int64(request.extendByDays) * 86_400_000
            state.purchases[originalTransactionID]?.transaction["expiresDate"] = new
            state.purchases[originalTransactionID]?.renewal?["renewalDate"] = new
            return new
        }
        return AppleRenewalExtension(
            effectiveDate: expires, originalTransactionId: originalTransactionID, success: true,
            webOrderLineItemId: "8000000001")
    }

    /// The transactions of every purchase that carry a `revocationDate`.
    /// The signed transactions of the order's purchases, as they stand; none for an order id it
    /// does not know (Apple's `status` 1).
    func lookUpOrderID(_ orderID: String) async throws(AppStoreAPIError) -> [String] {
        try begin("lookUpOrderID \(orderID)")
        let transactions = state.withLock { state in
            (state.orders[orderID] ?? []).compactMap { state.purchases[$0]?.transaction }
        }
        var result: [String] = []
        for transaction in transactions { result.append(try signed(transaction)) }
        return result
    }

    func refundHistory(transactionID: String, environment: AppleEnvironment) async throws(AppStoreAPIError)
        -> [String]
    {
        try begin("refundHistory \(transactionID)")
        if let refusal = state.withLock({ $0.actionRefusal }) { throw refusal }
        _ = try purchase(transactionID, environment)
        let all = state.withLock { Array($0.purchases.values) }
        var result: [String] = []
        for purchase in all where purchase.transaction["revocationDate"] != nil {
            result.append(try signed(purchase.transaction))
        }
        return result
    }

    /// Accepts a mass extension (it extends nothing here), or throws the refusal set with
    /// `refuseActions`.
    func massExtendRenewalDate(_ request: AppleMassExtensionRequest, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> String
    {
        try begin("massExtendRenewalDate \(request.productId) \(request.extendByDays)")
        if let refusal = state.withLock({ $0.actionRefusal }) { throw refusal }
        return request.requestIdentifier
    }

    /// A mass extension complete at 1 000 000 ms with one success, or the refusal set with
    /// `refuseActions`.
    func massExtensionStatus(productID: String, requestIdentifier: String, environment: AppleEnvironment)
        async throws(AppStoreAPIError) -> AppleMassExtensionStatus
    {
        try begin("massExtensionStatus \(productID) \(requestIdentifier)")
        if let refusal = state.withLock({ $0.actionRefusal }) { throw refusal }
        return AppleMassExtensionStatus(
            requestIdentifier: requestIdentifier, complete: true, completeDate: 1_000_000, succeededCount: 1,
            failedCount: 0)
    }

    /// Takes a consumption answer for a known transaction, or throws the refusal set with
    /// `refuseActions`.
    func sendConsumptionInformation(
        transactionID: String, _ request: AppleConsumptionInformation, environment: AppleEnvironment
    ) async throws(AppStoreAPIError) {
        try begin(
            "sendConsumptionInformation \(transactionID) \(request.deliveryStatus) \(request.refundPreference ?? "-")")
        if let refusal = state.withLock({ $0.actionRefusal }) { throw refusal }
    }

    /// Makes the operations (extend, refund history, mass extension, consumption) fail with
    /// `refusal` (nil: succeed).
    func refuseActions(_ refusal: AppStoreAPIError?) { state.withLock { $0.actionRefusal = refusal } }
}
