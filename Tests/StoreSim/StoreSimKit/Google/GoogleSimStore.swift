public import Foundation
import Synchronization

/// A subscription product the simulated Google Play sells: a subscription id with one base plan.
public struct GoogleSimProduct: Sendable, Hashable {
    public let id: String
    public let basePlanID: String
    public let period: AppleSimProduct.Period

    public init(id: String, basePlanID: String, period: AppleSimProduct.Period) {
        self.id = id
        self.basePlanID = basePlanID
        self.period = period
    }

    func end(from start: Int64) -> Int64 {
        AppleSimProduct(id: id, group: "", period: period, level: 1).end(from: start)
    }
}

/// How the simulated Google Play behaves.
public struct GoogleSimConfiguration: Sendable {
    public var packageName: String
    /// The base plans' grace period (Google allows 0 to 30 days); 0 for none.
    public var gracePeriodDays = 7
    /// Account hold after grace (Google allows 0 to 30 days).
    public var accountHoldDays = 30
    /// How long a purchase may stay unacknowledged before Google refunds and revokes it.
    public var acknowledgementWindowMilliseconds: Int64 = 3 * 86_400_000
    public var products: [GoogleSimProduct]

    public init(packageName: String, products: [GoogleSimProduct]) {
        self.packageName = packageName
        self.products = products
    }
}

/// The simulated Google Play: purchase tokens whose subscriptions renew, fall into grace and
/// account hold, recover, pause and resume, are cancelled, restarted, replaced through
/// `linkedPurchaseToken`, refunded and voided, and refunded by Google when nobody acknowledges
/// them in time. Every change is a Real-time developer notification in `outbox`; the Play
/// Developer API (`GoogleSimAPI`) reads the same state.
public final class GoogleSimStore: Sendable {
    public let configuration: GoogleSimConfiguration
    public let clock: SimClock
    private let state = Mutex(State())

    enum Phase: Sendable, Equatable {
        case active
        /// Renewal off; access lasts until the expiry.
        case canceled
        case grace(until: Int64)
        case onHold(until: Int64)
        case paused(resumeAt: Int64)
        case expired
    }

    /// How a purchase came to an end, for `canceledStateContext`.
    enum Ending: Sendable, Equatable {
        case user(at: Int64)
        case system
        case developer
        case replacement
    }

    struct Purchase: Sendable {
        let token: String
        var productID: String
        var basePlanID: String
        let startTime: Int64
        var expiry: Int64
        var phase = Phase.active
        var autoRenew = true
        var paymentFails = false
        /// A pause the customer scheduled: its length, starting at the next renewal.
        var scheduledPause: Int64?
        /// A product change that takes effect at the next renewal (a deferred replacement).
        var deferredProduct: String?
        var acknowledged = false
        let linkedPurchaseToken: String?
        var ending: Ending?
        let orderBase: String
        var renewals = 0
        let obfuscatedAccountID: String?
        var revoked: Int64?
        /// When the current order was charged (the purchase, or the latest renewal).
        var lastCharge: Int64 = 0
        /// The renewal date that failed, while in grace (the grace end is `expiry` then).
        var failedRenewal: Int64?

        var orderID: String { renewals == 0 ? orderBase : "\(orderBase)..\(renewals - 1)" }
    }

    /// A notification as made: its Pub/Sub message id, the notification JSON and when.
    public struct Message: Sendable {
        public let id: String
        public let notification: Data
        public let eventTime: Int64
        public let kind: String
    }

    public struct Voided: Sendable {
        let token: String
        let orderID: String
        let purchaseTime: Int64
        let voidedTime: Int64
    }

    struct State: Sendable {
        var purchases: [String: Purchase] = [:]
        var nextMessage = 1_000_000_000_001
        var nextOrder = 3_300
        var outbox: [Message] = []
        var voided: [Voided] = []
    }

    public init(configuration: GoogleSimConfiguration, clock: SimClock) {
        self.configuration = configuration
        self.clock = clock
    }

    // MARK: Customers

    /// A purchase of `productID`; returns its purchase token. With `linkedPurchaseToken`, a
    /// re-signup or an immediate plan change replacing that token.
    public func buy(productID: String, obfuscatedAccountID: String? = nil, linkedPurchaseToken: String? = nil)
        throws(SimError) -> String
    {
        let product = try product(productID)
        return try change { state, now throws(SimError) in
            if let linked = linkedPurchaseToken { _ = try Self.purchase(linked, in: state) }
            let token = Self.newToken(&state)
            state.nextOrder += 1
            state.purchases[token] = Purchase(
                token: token, productID: productID, basePlanID: product.basePlanID, startTime: now,
                expiry: product.end(from: now), linkedPurchaseToken: linkedPurchaseToken,
                orderBase: "GPA.\(state.nextOrder)-4417-0193-\(10000 + state.nextOrder % 90000)",
                obfuscatedAccountID: obfuscatedAccountID, lastCharge: now)
            if let linked = linkedPurchaseToken { replace(&state, linked, at: now) }
            emit(&state, token, 4, at: now)
            return token
        }
    }

    /// The app acknowledges the purchase (the API's `:acknowledge`).
    func acknowledge(_ token: String, productID: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            guard try Self.purchase(token, in: state).productID == productID else {
                throw SimError(.badRequest, "the token is not a purchase of \(productID)")
            }
            state.purchases[token]!.acknowledged = true
        }
    }

    /// Renewal off: access lasts until the expiry.
    public func cancel(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            guard try Self.purchase(token, in: state).phase == .active else {
                throw SimError(.conflict, "the subscription is not active")
            }
            state.purchases[token]!.autoRenew = false
            state.purchases[token]!.phase = .canceled
            state.purchases[token]!.ending = .user(at: now)
            emit(&state, token, 3, at: now)
        }
    }

    /// A cancelled subscription is turned back on before it expires.
    public func restart(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            guard try Self.purchase(token, in: state).phase == .canceled else {
                throw SimError(.conflict, "the subscription is not cancelled")
            }
            state.purchases[token]!.autoRenew = true
            state.purchases[token]!.phase = .active
            state.purchases[token]!.ending = nil
            emit(&state, token, 7, at: now)
        }
    }

    /// From now on renewals fail to charge (until `recover`).
    public func failPayment(_ token: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            _ = try Self.purchase(token, in: state)
            state.purchases[token]!.paymentFails = true
        }
    }

    /// The customer fixes their payment: a subscription in grace or on hold is charged now and
    /// starts a new period.
    public func recover(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            state.purchases[token]!.paymentFails = false
            switch purchase.phase {
            case .grace, .onHold:
                // Within grace the period runs from the renewal date that failed (no paid day
                // is lost); from account hold it starts now.
                let product = try product(purchase.productID)
                let from = Self.isOnHold(purchase) ? now : (purchase.failedRenewal ?? now)
                state.purchases[token]!.phase = .active
                state.purchases[token]!.expiry = product.end(from: from)
                state.purchases[token]!.renewals += 1
                state.purchases[token]!.lastCharge = now
                state.purchases[token]!.failedRenewal = nil
                emit(&state, token, 1, at: now)
            default: break
            }
        }
    }

    /// The customer schedules a pause of `length` ms, from the next renewal on.
    public func pause(_ token: String, length: Int64) throws(SimError) {
        try change { state, now throws(SimError) in
            guard try Self.purchase(token, in: state).phase == .active, length > 0 else {
                throw SimError(.conflict, "only an active subscription can be paused, for a positive length")
            }
            state.purchases[token]!.scheduledPause = length
            emit(&state, token, 11, at: now)
        }
    }

    /// A paused subscription resumes now (the customer does not wait for the automatic resume).
    public func resume(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            guard case .paused = try Self.purchase(token, in: state).phase else {
                throw SimError(.conflict, "the subscription is not paused")
            }
            try resumeNow(&state, token, at: now)
        }
    }

    /// A plan change to `productID`: at once (a new token replacing this one through
    /// `linkedPurchaseToken`; returns it) or at the next renewal (returns nil; the new token
    /// appears then).
    public func changeProduct(_ token: String, to productID: String, immediately: Bool) throws(SimError) -> String? {
        _ = try product(productID)
        let purchase = try change { state, _ throws(SimError) in try Self.purchase(token, in: state) }
        guard purchase.phase == .active else { throw SimError(.conflict, "the subscription is not active") }
        if immediately {
            return try buy(
                productID: productID, obfuscatedAccountID: purchase.obfuscatedAccountID, linkedPurchaseToken: token)
        }
        try change { state, _ throws(SimError) in state.purchases[token]!.deferredProduct = productID }
        return nil
    }

    /// Google refunds the purchase and revokes it now (a voided purchase, and REVOKED).
    public func refund(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            guard try Self.purchase(token, in: state).revoked == nil else {
                throw SimError(.conflict, "the purchase is already refunded")
            }
            revoke(&state, token, at: now)
        }
    }

    // MARK: Time

    /// Moves the clock by `offset` ms and lets everything due happen in time order.
    public func advance(by offset: Int64) {
        process(until: clock.now + max(0, offset))
        clock.advance(by: offset)
    }

    /// Lets everything due up to `target` happen, without moving the clock.
    public func process(until target: Int64) {
        state.withLock { state in
            while let (token, due) = Self.nextDue(in: state, window: configuration.acknowledgementWindowMilliseconds),
                due <= target
            {
                step(&state, token, at: due)
            }
        }
    }

    private static func nextDue(in state: State, window: Int64) -> (String, Int64)? {
        var earliest: (String, Int64)?
        for (token, purchase) in state.purchases where purchase.revoked == nil {
            var due: Int64?
            switch purchase.phase {
            case .active, .canceled: due = purchase.expiry
            case .grace(let until), .onHold(let until): due = until
            case .paused(let resumeAt): due = resumeAt
            case .expired: due = nil
            }
            if !purchase.acknowledged, purchase.phase != .expired {
                due = min(due ?? .max, purchase.startTime + window)
            }
            guard let due else { continue }
            if let current = earliest, (current.1, current.0) <= (due, token) { continue }
            earliest = (token, due)
        }
        return earliest
    }

    private func step(_ state: inout State, _ token: String, at now: Int64) {
        let purchase = state.purchases[token]!
        if !purchase.acknowledged && now >= purchase.startTime + configuration.acknowledgementWindowMilliseconds {
            // Nobody acknowledged it: Google refunds and revokes it.
            revoke(&state, token, at: now)
            state.purchases[token]!.ending = .system
            return
        }
        switch purchase.phase {
        case .canceled:
            state.purchases[token]!.phase = .expired
            emit(&state, token, 13, at: now)
        case .active where purchase.paymentFails:
            state.purchases[token]!.ending = nil
            if configuration.gracePeriodDays > 0 {
                let until = now + Int64(configuration.gracePeriodDays) * 86_400_000
                state.purchases[token]!.phase = .grace(until: until)
                state.purchases[token]!.failedRenewal = purchase.expiry
                state.purchases[token]!.expiry = until
                emit(&state, token, 6, at: now)
            } else {
                state.purchases[token]!.phase = .onHold(until: now + Int64(configuration.accountHoldDays) * 86_400_000)
                emit(&state, token, 5, at: now)
            }
        case .active:
            if let productID = purchase.deferredProduct {
                // The deferred plan change: a new token takes over from the renewal.
                state.purchases[token]!.deferredProduct = nil
                guard let product = try? product(productID) else { return expire(&state, token, at: now) }
                let next = Self.newToken(&state)
                state.nextOrder += 1
                state.purchases[next] = Purchase(
                    token: next, productID: productID, basePlanID: product.basePlanID, startTime: now,
                    expiry: product.end(from: now), acknowledged: true, linkedPurchaseToken: token,
                    orderBase: "GPA.\(state.nextOrder)-4417-0193-\(10000 + state.nextOrder % 90000)",
                    obfuscatedAccountID: purchase.obfuscatedAccountID)
                replace(&state, token, at: now)
                emit(&state, next, 4, at: now)
            } else if let length = purchase.scheduledPause {
                state.purchases[token]!.scheduledPause = nil
                state.purchases[token]!.phase = .paused(resumeAt: now + length)
                emit(&state, token, 10, at: now)
            } else {
                guard let product = try? product(purchase.productID) else { return expire(&state, token, at: now) }
                state.purchases[token]!.expiry = product.end(from: now)
                state.purchases[token]!.renewals += 1
                state.purchases[token]!.lastCharge = now
                emit(&state, token, 2, at: now)
            }
        case .grace:
            state.purchases[token]!.phase = .onHold(until: now + Int64(configuration.accountHoldDays) * 86_400_000)
            emit(&state, token, 5, at: now)
        case .onHold:
            state.purchases[token]!.phase = .expired
            state.purchases[token]!.ending = .system
            emit(&state, token, 13, at: now)
        case .paused:
            do {
                try resumeNow(&state, token, at: now)
            } catch {
                expire(&state, token, at: now)
            }
        case .expired:
            break
        }
    }

    /// `token` ends now (its product is no longer sold): EXPIRED.
    private func expire(_ state: inout State, _ token: String, at now: Int64) {
        state.purchases[token]!.phase = .expired
        state.purchases[token]!.ending = .system
        emit(&state, token, 13, at: now)
    }

    private func resumeNow(_ state: inout State, _ token: String, at now: Int64) throws(SimError) {
        let product = try product(state.purchases[token]!.productID)
        state.purchases[token]!.phase = .active
        state.purchases[token]!.expiry = product.end(from: now)
        state.purchases[token]!.renewals += 1
        state.purchases[token]!.lastCharge = now
        emit(&state, token, 2, at: now)
    }

    /// `token` ends now because another purchase replaced it.
    private func replace(_ state: inout State, _ token: String, at now: Int64) {
        state.purchases[token]!.phase = .expired
        state.purchases[token]!.autoRenew = false
        state.purchases[token]!.ending = .replacement
        state.purchases[token]!.expiry = min(state.purchases[token]!.expiry, now)
    }

    private func revoke(_ state: inout State, _ token: String, at now: Int64) {
        let purchase = state.purchases[token]!
        state.purchases[token]!.revoked = now
        state.purchases[token]!.phase = .expired
        state.purchases[token]!.autoRenew = false
        state.purchases[token]!.ending = .developer
        state.purchases[token]!.expiry = min(purchase.expiry, now)
        state.voided.append(
            Voided(token: token, orderID: purchase.orderID, purchaseTime: purchase.lastCharge, voidedTime: now))
        emit(&state, token, 12, at: now)
        emitVoided(&state, token, orderID: purchase.orderID, at: now)
    }

    // MARK: Reading

    /// The notifications made since the last call, oldest first.
    public func takeOutbox() -> [Message] {
        state.withLock { state in
            defer { state.outbox.removeAll() }
            return state.outbox
        }
    }

    /// `SubscriptionPurchaseV2` for `token`, as the API answers it now.
    func subscriptionV2(_ token: String) throws(SimError) -> [String: any Sendable] {
        try change { state, _ throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            var lineItem: [String: any Sendable] = [
                "productId": purchase.productID, "expiryTime": Self.rfc3339(purchase.expiry),
                "autoRenewingPlan": ["autoRenewEnabled": purchase.autoRenew] as [String: any Sendable],
                "offerDetails": ["basePlanId": purchase.basePlanID] as [String: any Sendable],
                "latestSuccessfulOrderId": purchase.orderID,
            ]
            if let deferred = purchase.deferredProduct {
                lineItem["deferredItemReplacement"] = ["productId": deferred] as [String: any Sendable]
            }
            var body: [String: any Sendable] = [
                "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US",
                "startTime": Self.rfc3339(purchase.startTime), "subscriptionState": Self.stateName(purchase),
                "latestOrderId": purchase.orderID,
                "acknowledgementState": purchase.acknowledged
                    ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
                "lineItems": [lineItem],
            ]
            if let linked = purchase.linkedPurchaseToken { body["linkedPurchaseToken"] = linked }
            if let account = purchase.obfuscatedAccountID {
                body["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": account] as [String: any Sendable]
            }
            if case .paused(let resumeAt) = purchase.phase {
                body["pausedStateContext"] = ["autoResumeTime": Self.rfc3339(resumeAt)] as [String: any Sendable]
            }
            switch purchase.ending {
            case .user(let at):
                body["canceledStateContext"] =
                    ["userInitiatedCancellation": ["cancelTime": Self.rfc3339(at)] as [String: any Sendable]]
                    as [String: any Sendable]
            case .system:
                body["canceledStateContext"] = ["systemInitiatedCancellation": [:] as [String: any Sendable]]
            case .developer:
                body["canceledStateContext"] = ["developerInitiatedCancellation": [:] as [String: any Sendable]]
            case .replacement:
                body["canceledStateContext"] = ["replacementCancellation": [:] as [String: any Sendable]]
            case nil:
                break
            }
            return body
        }
    }

    /// Voided purchases in [start, end), oldest first.
    func voided(from start: Int64, to end: Int64) -> [Voided] {
        state.withLock { $0.voided.filter { $0.voidedTime >= start && $0.voidedTime < end } }
    }

    static func isOnHold(_ purchase: Purchase) -> Bool {
        if case .onHold = purchase.phase { return true }
        return false
    }

    static func stateName(_ purchase: Purchase) -> String {
        switch purchase.phase {
        case .active: "SUBSCRIPTION_STATE_ACTIVE"
        case .canceled: "SUBSCRIPTION_STATE_CANCELED"
        case .grace: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
        case .onHold: "SUBSCRIPTION_STATE_ON_HOLD"
        case .paused: "SUBSCRIPTION_STATE_PAUSED"
        case .expired: "SUBSCRIPTION_STATE_EXPIRED"
        }
    }

    // MARK: Notifications

    private func emit(_ state: inout State, _ token: String, _ type: Int, at now: Int64) {
        let purchase = state.purchases[token]!
        let notification: [String: any Sendable] = [
            "version": "1.0", "packageName": configuration.packageName, "eventTimeMillis": String(now),
            "subscriptionNotification": [
                "version": "1.0", "notificationType": type, "purchaseToken": token,
                "subscriptionId": purchase.productID,
            ] as [String: any Sendable],
        ]
        append(&state, notification, kind: "subscription \(type)", at: now)
    }

    private func emitVoided(_ state: inout State, _ token: String, orderID: String, at now: Int64) {
        let notification: [String: any Sendable] = [
            "version": "1.0", "packageName": configuration.packageName, "eventTimeMillis": String(now),
            "voidedPurchaseNotification": [
                "purchaseToken": token, "orderId": orderID, "productType": 1, "refundType": 1,
            ] as [String: any Sendable],
        ]
        append(&state, notification, kind: "voided", at: now)
    }

    private func append(_ state: inout State, _ notification: [String: any Sendable], kind: String, at now: Int64) {
        guard let data = try? JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys]) else {
            preconditionFailure("a notification is always JSON")
        }
        state.outbox.append(Message(id: String(state.nextMessage), notification: data, eventTime: now, kind: kind))
        state.nextMessage += 1
    }

    // MARK: Helpers

    private func product(_ id: String) throws(SimError) -> GoogleSimProduct {
        guard let product = configuration.products.first(where: { $0.id == id }) else {
            throw SimError(.notFound, "no product \(id)")
        }
        return product
    }

    private static func purchase(_ token: String, in state: State) throws(SimError) -> Purchase {
        guard let purchase = state.purchases[token] else { throw SimError(.notFound, "no purchase token \(token)") }
        return purchase
    }

    /// A token shaped like Play's: 24 lowercase letters, a dot, then 125 URL-safe base64
    /// characters starting "AO-J1O".
    private static func newToken(_ state: inout State) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let base64 = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var generator = SystemRandomNumberGenerator()
        let head = String((0..<24).map { _ in letters.randomElement(using: &generator)! })
        let tail = String((0..<119).map { _ in base64.randomElement(using: &generator)! })
        return head + ".AO-J1O" + tail
    }

    static func rfc3339(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    private func change<T>(_ body: (inout State, Int64) throws(SimError) -> T) throws(SimError) -> T {
        let now = clock.now
        return try state.withLock { state throws(SimError) -> T in try body(&state, now) }
    }
}
