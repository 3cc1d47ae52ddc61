import Foundation
import GooglePlay
import Synchronization

/// An in-memory Google Play: purchases by token, acknowledgement and consumption that can be
/// made to fail, and voided purchases.
final class FakeGooglePlayAPI: GooglePlayAPI {
    private struct State {
        var subscriptions: [String: SubscriptionPurchaseV2] = [:]
        var products: [String: ProductPurchase] = [:]
        var voided: [VoidedPurchase] = []
        var failAcknowledgements = false
        var calls: [String] = []
    }

    private let state = Mutex(State())

    func setSubscription(_ token: String, _ purchase: SubscriptionPurchaseV2) {
        state.withLock { $0.subscriptions[token] = purchase }
    }

    func setProduct(_ token: String, _ purchase: ProductPurchase) { state.withLock { $0.products[token] = purchase } }
    func addVoided(_ purchase: VoidedPurchase) { state.withLock { $0.voided.append(purchase) } }
    func setFailAcknowledgements(_ fail: Bool) { state.withLock { $0.failAcknowledgements = fail } }
    var calls: [String] { state.withLock { $0.calls } }

    func subscription(packageName: String, token: String) async throws(GooglePlayAPIError) -> SubscriptionPurchaseV2 {
        let found = state.withLock { state -> SubscriptionPurchaseV2? in
            state.calls.append("get \(token)")
            return state.subscriptions[token]
        }
        guard let found else { throw GooglePlayAPIError(.notFound, "no such token", httpStatus: 404) }
        return found
    }

    private func acknowledgement(_ call: String, _ token: String, _ change: (inout State) -> Void)
        throws(GooglePlayAPIError)
    {
        let failing = state.withLock { state -> Bool in
            state.calls.append("\(call) \(token)")
            if !state.failAcknowledgements { change(&state) }
            return state.failAcknowledgements
        }
        if failing { throw GooglePlayAPIError(.server, "backend error", httpStatus: 503) }
    }

    func acknowledgeSubscription(packageName: String, subscriptionID: String, token: String)
        async throws(GooglePlayAPIError)
    {
        try acknowledgement("acknowledge", token) {
            $0.subscriptions[token]?.acknowledgementState = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
        }
    }

    func productPurchase(packageName: String, productID: String, token: String) async throws(GooglePlayAPIError)
        -> ProductPurchase
    {
        let found = state.withLock { state -> ProductPurchase? in
            state.calls.append("product \(token)")
            return state.products[token]
        }
        guard let found else { throw GooglePlayAPIError(.notFound, "no such token", httpStatus: 404) }
        return found
    }

    func acknowledgeProduct(packageName: String, productID: String, token: String) async throws(GooglePlayAPIError) {
        try acknowledgement("acknowledge-product", token) { $0.products[token]?.acknowledgementState = 1 }
    }

    func consumeProduct(packageName: String, productID: String, token: String) async throws(GooglePlayAPIError) {
        try acknowledgement("consume", token) { $0.products[token]?.consumptionState = 1 }
    }

    func voidedPurchases(packageName: String, start: Date, end: Date) async throws(GooglePlayAPIError)
        -> [VoidedPurchase]
    {
        state.withLock { state in
            state.calls.append("voided")
            return state.voided
        }
    }
}
