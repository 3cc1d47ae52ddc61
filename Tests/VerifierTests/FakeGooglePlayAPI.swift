import Foundation
import GooglePlay
import HTTPClient
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
        /// The [start, end) of each voided purchases call, epoch ms.
        var voidedWindows: [ClosedRange<Int64>] = []
        /// Calls (by their `calls` name prefix) to hold after they have read their answer.
        var holds: [String: Gate] = [:]
        /// What the next store action (revoke, refund, defer, cancel) fails with.
        var actionFailure: GooglePlayAPIError?
    }

    /// Holds one call, after it has read its answer, until `open()`: a slow answer.
    final class Gate: Sendable {
        private let state = Mutex<
            (
                open: Bool, arrived: Bool, waiters: [CheckedContinuation<Void, Never>],
                watchers: [CheckedContinuation<Void, Never>]
            )
        >((false, false, [], []))

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Returns once the held call has read its answer and is waiting.
        func arrival() async {
            await withCheckedContinuation { continuation in
                let arrived = state.withLock { state -> Bool in
                    if !state.arrived { state.watchers.append(continuation) }
                    return state.arrived
                }
                if arrived { continuation.resume() }
            }
        }

        func wait() async {
            await withCheckedContinuation { continuation in
                let (open, watchers) = state.withLock { state in
                    state.arrived = true
                    if !state.open { state.waiters.append(continuation) }
                    defer { state.watchers = [] }
                    return (state.open, state.watchers)
                }
                for watcher in watchers { watcher.resume() }
                if open { continuation.resume() }
            }
        }
    }

    /// The next call whose name starts with `prefix` reads its answer, then waits for the gate.
    func hold(_ prefix: String) -> Gate {
        let gate = Gate()
        state.withLock { $0.holds[prefix] = gate }
        return gate
    }

    private func takeGate(for call: String, in state: inout State) -> Gate? {
        guard let prefix = state.holds.keys.first(where: { call.hasPrefix($0) }) else { return nil }
        return state.holds.removeValue(forKey: prefix)
    }

    private let state = Mutex(State())

    func setSubscription(_ token: String, _ purchase: SubscriptionPurchaseV2) {
        state.withLock { $0.subscriptions[token] = purchase }
    }

    func setProduct(_ token: String, _ purchase: ProductPurchase) { state.withLock { $0.products[token] = purchase } }
    func addVoided(_ purchase: VoidedPurchase) { state.withLock { $0.voided.append(purchase) } }
    func setFailAcknowledgements(_ fail: Bool) { state.withLock { $0.failAcknowledgements = fail } }
    var calls: [String] { state.withLock { $0.calls } }
    var voidedWindows: [ClosedRange<Int64>] { state.withLock { $0.voidedWindows } }

    func subscription(packageName: String, token: String) async throws(GooglePlayAPIError) -> SubscriptionPurchaseV2 {
        let (found, gate) = state.withLock { state -> (SubscriptionPurchaseV2?, Gate?) in
            state.calls.append("get \(token)")
            return (state.subscriptions[token], takeGate(for: "get \(token)", in: &state))
        }
        await gate?.wait()
        guard let found else { throw GooglePlayAPIError(.notFound, "no such token", httpStatus: 404) }
        return found
    }

    private func acknowledgement(_ call: String, _ token: String, _ change: (inout State) -> Void)
        async throws(GooglePlayAPIError)
    {
        let (failing, gate) = state.withLock { state -> (Bool, Gate?) in
            state.calls.append("\(call) \(token)")
            if !state.failAcknowledgements { change(&state) }
            return (state.failAcknowledgements, takeGate(for: "\(call) \(token)", in: &state))
        }
        await gate?.wait()
        if failing { throw GooglePlayAPIError(.server, "backend error", httpStatus: 503) }
    }

    func acknowledgeSubscription(packageName: String, subscriptionID: String, token: String)
        async throws(GooglePlayAPIError)
    {
        try await acknowledgement("acknowledge", token) {
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
        try await acknowledgement("acknowledge-product", token) { $0.products[token]?.acknowledgementState = 1 }
    }

    func consumeProduct(packageName: String, productID: String, token: String) async throws(GooglePlayAPIError) {
        try await acknowledgement("consume", token) { $0.products[token]?.consumptionState = 1 }
    }

    func voidedPurchases(packageName: String, start: Date, end: Date) async throws(GooglePlayAPIError)
        -> [VoidedPurchase]
    {
        state.withLock { state in
            state.calls.append("voided")
            state.voidedWindows.append(
                Int64(start.timeIntervalSince1970 * 1000)...Int64(end.timeIntervalSince1970 * 1000))
            return state.voided
        }
    }

    // MARK: Store actions

    /// Makes the next store action fail with `error` and change nothing.
    func failNextAction(_ error: GooglePlayAPIError) { state.withLock { $0.actionFailure = error } }

    /// Records the action `call` and applies `change` unless a failure was set for it.
    private func action(_ call: String, _ change: (inout State) throws(GooglePlayAPIError) -> Void)
        throws(GooglePlayAPIError)
    {
        try state.withLock { state throws(GooglePlayAPIError) in
            state.calls.append(call)
            if let failure = state.actionFailure {
                state.actionFailure = nil
                throw failure
            }
            try change(&state)
        }
    }

    func revokeSubscription(packageName: String, token: String, refund: GoogleRevocationRefund)
        async throws(GooglePlayAPIError)
    {
        try action("revoke \(refund.rawValue) \(token)") { state in
            state.subscriptions[token]?.subscriptionState = "SUBSCRIPTION_STATE_EXPIRED"
            state.subscriptions[token]?.lineItems?[0].autoRenewingPlan?.autoRenewEnabled = nil
        }
    }

    func refundOrder(packageName: String, orderID: String, revoke: Bool) async throws(GooglePlayAPIError) {
        try action("refund \(orderID) revoke=\(revoke)") { _ in }
    }

    func deferSubscription(
        packageName: String, subscriptionID: String, token: String, expectedExpiry: Int64, desiredExpiry: Int64
    ) async throws(GooglePlayAPIError) -> Int64 {
        try action("defer \(subscriptionID) \(token) \(expectedExpiry)->\(desiredExpiry)") { state in
            state.subscriptions[token]?.lineItems?[0].expiryTime = Date(
                timeIntervalSince1970: Double(desiredExpiry) / 1000
            ).formatted(.iso8601)
        }
        return desiredExpiry
    }

    func cancelSubscription(packageName: String, token: String) async throws(GooglePlayAPIError) {
        try action("cancel \(token)") { state in
            state.subscriptions[token]?.subscriptionState = "SUBSCRIPTION_STATE_CANCELED"
            state.subscriptions[token]?.lineItems?[0].autoRenewingPlan?.autoRenewEnabled = nil
        }
    }
}
