public import AppStore
import Crypto
import Foundation
import Synchronization

/// A product the simulated App Store sells: an auto-renewable subscription in a group.
public struct AppleSimProduct: Sendable, Hashable {
    public enum Period: Sendable, Hashable {
        case days(Int)
        case months(Int)
        case years(Int)
    }

    public let id: String
    public let group: String
    public let period: Period
    /// The level of service in its group: 1 is the highest. Moving to a lower number is an
    /// upgrade (at once), to a higher one a downgrade (at the next renewal).
    public let level: Int
    /// The price in milliunits of the currency, as Apple reports it.
    public let price: Int64

    public init(id: String, group: String, period: Period, level: Int, price: Int64 = 9_990) {
        self.id = id
        self.group = group
        self.period = period
        self.level = level
        self.price = price
    }

    /// The end of one period that starts at `start` (epoch ms), by the UTC calendar.
    func end(from start: Int64) -> Int64 {
        var components = DateComponents()
        switch period {
        case .days(let days): components.day = days
        case .months(let months): components.month = months
        case .years(let years): components.year = years
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let startDate = Date(timeIntervalSince1970: Double(start) / 1000)
        let end = calendar.date(byAdding: components, to: startDate) ?? startDate
        // A period always moves time forward (a renewal at its own start would repeat forever).
        return max(Int64((end.timeIntervalSince1970 * 1000).rounded()), start + 86_400_000)
    }
}

/// How the simulated App Store behaves: the app it serves and the rules of its subscriptions.
public struct AppleSimConfiguration: Sendable {
    public var bundleID: String
    public var appAppleID: Int64
    /// `Sandbox` or `Production`, as Apple writes it in payloads.
    public var environment: String
    /// The billing grace period after a failed renewal (Apple offers 3, 16 or 28 days); nil for none.
    public var gracePeriodDays: Int?
    /// How long Apple keeps retrying a failed renewal before the subscription expires.
    public var billingRetryDays = 60
    public var products: [AppleSimProduct]

    public init(
        bundleID: String, appAppleID: Int64, environment: String = "Sandbox", gracePeriodDays: Int? = 16,
        products: [AppleSimProduct]
    ) {
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
        self.gracePeriodDays = gracePeriodDays
        self.products = products
    }
}

/// The simulated App Store: subscriptions that renew, fail to renew, recover, expire, are
/// refunded, upgraded and downgraded as the clock moves and customers act; every change is a
/// signed App Store Server Notification V2 in `outbox`, and the App Store Server API reads
/// the same state (`AppleSimAPI`).
public final class AppleSimStore: Sendable {
    public let configuration: AppleSimConfiguration
    public let clock: SimClock
    public let chain: AppleSigningChain
    private let state: Mutex<State>

    /// One purchase of the subscription: the first, or a renewal, or the purchase an upgrade made.
    struct Transaction: Sendable {
        let id: String
        let productID: String
        let purchaseDate: Int64
        let expiresDate: Int64
        /// `PURCHASE` or `RENEWAL`.
        let reason: String
        let webOrderLineItemID: String
        var revocationDate: Int64?
        var revocationReason: Int?
        var isUpgraded = false
    }

    /// Where a subscription stands between transactions.
    enum Phase: Sendable, Equatable {
        case active
        /// Renewal failed; access continues until `until` while Apple retries.
        case grace(until: Int64)
        /// Renewal failed and no grace (or it ended); Apple retries until `until`.
        case billingRetry(until: Int64)
        case expired
        case revoked
    }

    struct Subscription: Sendable {
        let originalTransactionID: String
        let originalPurchaseDate: Int64
        var productID: String
        var autoRenewProductID: String
        var appAccountToken: String?
        var familyShared: Bool
        var transactions: [Transaction]
        var autoRenew = true
        var paymentFails = false
        var phase = Phase.active
        /// Apple's `expirationIntent`: 1 cancelled by the customer, 2 billing error.
        var expirationIntent: Int?

        var latest: Transaction { transactions[transactions.count - 1] }

        /// The status the API reports: 1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked.
        var status: Int {
            switch phase {
            case .active: 1
            case .expired: 2
            case .billingRetry: 3
            case .grace: 4
            case .revoked: 5
            }
        }
    }

    /// A notification as sent: its signed body and when it was made.
    public struct SentNotification: Sendable {
        public let uuid: String
        public let type: String
        public let subtype: String?
        public let originalTransactionID: String
        public let signedDate: Int64
        public let signedPayload: String
    }

    struct State: Sendable {
        var subscriptions: [String: Subscription] = [:]
        /// Every transaction id (original or not) to its subscription's original id.
        var owners: [String: String] = [:]
        var nextID: Int64 = 2_000_000_000_000_001
        var outbox: [SentNotification] = []
        var sent: [SentNotification] = []
    }

    public init(configuration: AppleSimConfiguration, clock: SimClock, chain: AppleSigningChain) {
        self.configuration = configuration
        self.clock = clock
        self.chain = chain
        self.state = Mutex(State())
    }

    // MARK: Customers

    /// A purchase of `productID`; returns its `originalTransactionId`.
    public func buy(productID: String, appAccountToken: String? = nil, familyShared: Bool = false) throws(SimError)
        -> String
    {
        let product = try product(productID)
        if let appAccountToken, UUID(uuidString: appAccountToken) == nil {
            throw SimError(.badRequest, "appAccountToken must be a UUID, got \"\(appAccountToken)\"")
        }
        return try change { state, now throws(SimError) in
            let id = Self.nextID(&state)
            let transaction = Transaction(
                id: id, productID: productID, purchaseDate: now, expiresDate: product.end(from: now),
                reason: "PURCHASE", webOrderLineItemID: Self.nextID(&state))
            state.subscriptions[id] = Subscription(
                originalTransactionID: id, originalPurchaseDate: now, productID: productID,
                autoRenewProductID: productID, appAccountToken: appAccountToken?.lowercased(),
                familyShared: familyShared, transactions: [transaction])
            state.owners[id] = id
            emit(&state, id, "SUBSCRIBED", "INITIAL_BUY", at: now)
            return id
        }
    }

    /// Turns auto-renew off: the subscription ends at the end of the period.
    public func cancel(_ id: String) throws(SimError) {
        try setAutoRenew(id, false)
    }

    /// Turns auto-renew back on.
    public func resubscribe(_ id: String) throws(SimError) {
        try setAutoRenew(id, true)
    }

    private func setAutoRenew(_ id: String, _ on: Bool) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.original(id, in: state)
            switch state.subscriptions[original]!.phase {
            case .expired, .revoked:
                throw SimError(.conflict, "\(id) has ended: a new purchase would start it again")
            default: break
            }
            guard state.subscriptions[original]!.autoRenew != on else { return }
            state.subscriptions[original]!.autoRenew = on
            emit(
                &state, original, "DID_CHANGE_RENEWAL_STATUS", on ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED",
                at: now)
        }
    }

    /// From now on renewals fail to charge (until `recover`).
    public func failPayment(_ id: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            state.subscriptions[try Self.original(id, in: state)]!.paymentFails = true
        }
    }

    /// The customer fixes their payment method: a subscription in grace or billing retry renews
    /// now, and later renewals charge. Within grace no paid day is lost (the new period runs
    /// from the renewal date that failed); in billing retry it runs from now. A subscription
    /// whose auto-renew is off stays as it is.
    public func recover(_ id: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.original(id, in: state)
            state.subscriptions[original]!.paymentFails = false
            guard state.subscriptions[original]!.autoRenew else { return }
            switch state.subscriptions[original]!.phase {
            case .grace:
                let from = state.subscriptions[original]!.latest.expiresDate
                try renew(&state, original, at: now, from: from, subtype: "BILLING_RECOVERY")
            case .billingRetry:
                try renew(&state, original, at: now, subtype: "BILLING_RECOVERY")
            default: break
            }
        }
    }

    /// Apple refunds the newest transaction: access ends now.
    public func refund(_ id: String) throws(SimError) {
        try revoke(id, type: "REFUND", reason: 0)
    }

    /// A family member loses access to a family-shared purchase.
    public func revokeFamilySharing(_ id: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            guard state.subscriptions[try Self.original(id, in: state)]!.familyShared else {
                throw SimError(.conflict, "\(id) is not a family-shared purchase")
            }
        }
        try revoke(id, type: "REVOKE", reason: nil)
    }

    private func revoke(_ id: String, type: String, reason: Int?) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.original(id, in: state)
            guard state.subscriptions[original]!.phase != .revoked else {
                throw SimError(.conflict, "\(id) is already revoked")
            }
            let last = state.subscriptions[original]!.transactions.count - 1
            state.subscriptions[original]!.transactions[last].revocationDate = now
            state.subscriptions[original]!.transactions[last].revocationReason = reason
            state.subscriptions[original]!.phase = .revoked
            emit(&state, original, type, nil, at: now)
        }
    }

    /// Apple takes a refund back: the newest transaction counts again.
    public func reverseRefund(_ id: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.original(id, in: state)
            guard state.subscriptions[original]!.phase == .revoked else {
                throw SimError(.conflict, "\(id) is not refunded")
            }
            let last = state.subscriptions[original]!.transactions.count - 1
            state.subscriptions[original]!.transactions[last].revocationDate = nil
            state.subscriptions[original]!.transactions[last].revocationReason = nil
            state.subscriptions[original]!.phase =
                state.subscriptions[original]!.latest.expiresDate > now ? .active : .expired
            emit(&state, original, "REFUND_REVERSED", nil, at: now)
        }
    }

    /// The customer moves to `productID` in the same group, as Apple rules it: to a higher level,
    /// or to the same level with the same period, at once (UPGRADE: the current transaction is
    /// marked upgraded and a new one starts now); to a lower level, or the same level with
    /// another period, at the next renewal (DOWNGRADE); back to the current product, which
    /// cancels a pending change (no subtype).
    public func changeProduct(_ id: String, to productID: String) throws(SimError) {
        let target = try product(productID)
        try change { state, now throws(SimError) in
            let original = try Self.original(id, in: state)
            let current = try product(state.subscriptions[original]!.productID)
            guard current.group == target.group else {
                throw SimError(.badRequest, "\(productID) is not in the group \(current.group)")
            }
            guard state.subscriptions[original]!.phase == .active else {
                throw SimError(.conflict, "\(id) is not active")
            }
            if target.id == current.id {
                guard state.subscriptions[original]!.autoRenewProductID != productID else { return }
                state.subscriptions[original]!.autoRenewProductID = productID
                emit(&state, original, "DID_CHANGE_RENEWAL_PREF", nil, at: now)
            } else if target.level < current.level || (target.level == current.level && target.period == current.period)
            {
                let last = state.subscriptions[original]!.transactions.count - 1
                state.subscriptions[original]!.transactions[last].isUpgraded = true
                let transaction = Transaction(
                    id: Self.nextID(&state), productID: productID, purchaseDate: now,
                    expiresDate: target.end(from: now), reason: "PURCHASE", webOrderLineItemID: Self.nextID(&state))
                state.owners[transaction.id] = original
                state.subscriptions[original]!.transactions.append(transaction)
                state.subscriptions[original]!.productID = productID
                state.subscriptions[original]!.autoRenewProductID = productID
                emit(&state, original, "DID_CHANGE_RENEWAL_PREF", "UPGRADE", at: now)
            } else {
                state.subscriptions[original]!.autoRenewProductID = productID
                emit(&state, original, "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", at: now)
            }
        }
    }

    // MARK: Time

    /// Moves the clock by `offset` ms and lets everything due happen, in time order, each
    /// notification dated when it happened.
    public func advance(by offset: Int64) {
        process(until: clock.now + max(0, offset))
        clock.advance(by: offset)
    }

    /// Lets everything due up to `target` happen, without moving the clock (for a clock that
    /// several stores share).
    public func process(until target: Int64) {
        state.withLock { state in
            while let (original, due) = Self.nextDue(in: state), due <= target {
                step(&state, original, at: due)
            }
        }
    }

    /// The earliest moment something happens by itself, and to which subscription.
    private static func nextDue(in state: State) -> (String, Int64)? {
        var earliest: (String, Int64)?
        for (original, subscription) in state.subscriptions {
            let due: Int64?
            switch subscription.phase {
            case .active: due = subscription.latest.expiresDate
            case .grace(let until), .billingRetry(let until): due = until
            case .expired, .revoked: due = nil
            }
            guard let due else { continue }
            if let current = earliest, (current.1, current.0) <= (due, original) { continue }
            earliest = (original, due)
        }
        return earliest
    }

    /// What happens to `original` at `now`, when it is due.
    private func step(_ state: inout State, _ original: String, at now: Int64) {
        let subscription = state.subscriptions[original]!
        switch subscription.phase {
        case .active where !subscription.autoRenew:
            state.subscriptions[original]!.phase = .expired
            state.subscriptions[original]!.expirationIntent = 1
            emit(&state, original, "EXPIRED", "VOLUNTARY", at: now)
        case .active where subscription.paymentFails:
            state.subscriptions[original]!.expirationIntent = 2
            if let days = configuration.gracePeriodDays {
                state.subscriptions[original]!.phase = .grace(until: now + Int64(days) * 86_400_000)
                emit(&state, original, "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: now)
            } else {
                state.subscriptions[original]!.phase = .billingRetry(until: retryEnd(subscription))
                emit(&state, original, "DID_FAIL_TO_RENEW", nil, at: now)
            }
        case .active:
            do {
                try renew(&state, original, at: now, subtype: nil)
            } catch {
                // The product it would renew into is gone: it ends (and stops being due).
                state.subscriptions[original]!.phase = .expired
                emit(&state, original, "EXPIRED", "PRODUCT_NOT_FOR_SALE", at: now)
            }
        case .grace:
            state.subscriptions[original]!.phase = .billingRetry(until: retryEnd(subscription))
            emit(&state, original, "GRACE_PERIOD_EXPIRED", nil, at: now)
        case .billingRetry:
            state.subscriptions[original]!.phase = .expired
            emit(&state, original, "EXPIRED", "BILLING_RETRY", at: now)
        case .expired, .revoked:
            break
        }
    }

    private func retryEnd(_ subscription: Subscription) -> Int64 {
        subscription.latest.expiresDate + Int64(configuration.billingRetryDays) * 86_400_000
    }

    /// A renewal into `autoRenewProductID` at `now`, its period starting at `from` (now unless
    /// given).
    private func renew(_ state: inout State, _ original: String, at now: Int64, from: Int64? = nil, subtype: String?)
        throws(SimError)
    {
        let productID = state.subscriptions[original]!.autoRenewProductID
        let product = try product(productID)
        let transaction = Transaction(
            id: Self.nextID(&state), productID: productID, purchaseDate: now,
            expiresDate: product.end(from: from ?? now), reason: "RENEWAL", webOrderLineItemID: Self.nextID(&state))
        state.owners[transaction.id] = original
        state.subscriptions[original]!.transactions.append(transaction)
        state.subscriptions[original]!.productID = productID
        state.subscriptions[original]!.phase = .active
        state.subscriptions[original]!.expirationIntent = nil
        emit(&state, original, "DID_RENEW", subtype, at: now)
    }

    // MARK: Reading

    /// The notifications made since the last call, oldest first, for delivery.
    public func takeOutbox() -> [SentNotification] {
        state.withLock { state in
            defer { state.outbox.removeAll() }
            return state.outbox
        }
    }

    /// Every notification made so far, oldest first (for the notification history API).
    public var sentNotifications: [SentNotification] { state.withLock { $0.sent } }

    /// The original transaction id of the subscription `transactionID` belongs to.
    public func originalTransactionID(of transactionID: String) -> String? {
        state.withLock { $0.owners[transactionID] }
    }

    /// The signed transaction `transactionID` as it stands now.
    public func signedTransaction(_ transactionID: String) throws(SimError) -> String {
        try read { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            let subscription = state.subscriptions[original]!
            guard let transaction = subscription.transactions.first(where: { $0.id == transactionID }) else {
                throw SimError(.notFound, "no transaction \(transactionID)")
            }
            return try sign(transactionPayload(subscription, transaction, signedAt: now))
        }
    }

    /// The API's subscription statuses for the subscription `transactionID` belongs to: its
    /// status, newest transaction and renewal info, signed now.
    public func statuses(_ transactionID: String) throws(SimError) -> [String: any Sendable] {
        try read { state, now throws(SimError) in
            let subscription = state.subscriptions[try Self.original(transactionID, in: state)]!
            let group = try product(subscription.productID).group
            let last: [String: any Sendable] = [
                "status": subscription.status,
                "originalTransactionId": subscription.originalTransactionID,
                "signedTransactionInfo": try sign(transactionPayload(subscription, subscription.latest, signedAt: now)),
                "signedRenewalInfo": try sign(renewalPayload(subscription, signedAt: now)),
            ]
            var answer: [String: any Sendable] = [
                "environment": configuration.environment, "bundleId": configuration.bundleID,
                "data": [
                    ["subscriptionGroupIdentifier": group, "lastTransactions": [last]] as [String: any Sendable]
                ],
            ]
            // Apple leaves appAppleId out in the sandbox.
            if configuration.environment == "Production" { answer["appAppleId"] = configuration.appAppleID }
            return answer
        }
    }

    /// Every transaction of the subscription `transactionID` belongs to, oldest first, signed now.
    public func history(_ transactionID: String) throws(SimError) -> [String] {
        try read { state, now throws(SimError) in
            let subscription = state.subscriptions[try Self.original(transactionID, in: state)]!
            var signed: [String] = []
            for transaction in subscription.transactions {
                signed.append(try sign(transactionPayload(subscription, transaction, signedAt: now)))
            }
            return signed
        }
    }

    /// Sets the `appAccountToken` of the subscription `originalTransactionID` (the API's PUT).
    public func setAppAccountToken(_ originalTransactionID: String, _ token: String) throws(SimError) {
        guard UUID(uuidString: token) != nil else {
            throw SimError(.badRequest, "appAccountToken must be a UUID")
        }
        try change { state, _ throws(SimError) in
            guard state.subscriptions[originalTransactionID] != nil else {
                throw SimError(.notFound, "no original transaction \(originalTransactionID)")
            }
            state.subscriptions[originalTransactionID]!.appAccountToken = token.lowercased()
        }
    }

    // MARK: Payloads

    private func transactionPayload(_ subscription: Subscription, _ transaction: Transaction, signedAt: Int64)
        throws(SimError) -> [String: any Sendable]
    {
        let product = try product(transaction.productID)
        var payload: [String: any Sendable] = [
            "transactionId": transaction.id, "originalTransactionId": subscription.originalTransactionID,
            "webOrderLineItemId": transaction.webOrderLineItemID, "bundleId": configuration.bundleID,
            "productId": transaction.productID, "subscriptionGroupIdentifier": product.group,
            "purchaseDate": transaction.purchaseDate, "originalPurchaseDate": subscription.originalPurchaseDate,
            "expiresDate": transaction.expiresDate, "quantity": 1, "type": "Auto-Renewable Subscription",
            "inAppOwnershipType": subscription.familyShared ? "FAMILY_SHARED" : "PURCHASED", "signedDate": signedAt,
            "environment": configuration.environment, "transactionReason": transaction.reason, "storefront": "USA",
            "storefrontId": "143441", "price": product.price, "currency": "USD",
        ]
        if let token = subscription.appAccountToken { payload["appAccountToken"] = token }
        if let date = transaction.revocationDate { payload["revocationDate"] = date }
        if let reason = transaction.revocationReason { payload["revocationReason"] = reason }
        if transaction.isUpgraded { payload["isUpgraded"] = true }
        return payload
    }

    private func renewalPayload(_ subscription: Subscription, signedAt: Int64) -> [String: any Sendable] {
        var payload: [String: any Sendable] = [
            "originalTransactionId": subscription.originalTransactionID, "productId": subscription.productID,
            "autoRenewProductId": subscription.autoRenewProductID, "autoRenewStatus": subscription.autoRenew ? 1 : 0,
            "signedDate": signedAt, "environment": configuration.environment,
            "recentSubscriptionStartDate": subscription.originalPurchaseDate,
        ]
        switch subscription.phase {
        case .grace(let until):
            payload["isInBillingRetryPeriod"] = true
            payload["gracePeriodExpiresDate"] = until
        case .billingRetry:
            payload["isInBillingRetryPeriod"] = true
        default:
            payload["isInBillingRetryPeriod"] = false
        }
        if let intent = subscription.expirationIntent { payload["expirationIntent"] = intent }
        if subscription.autoRenew && subscription.phase == .active {
            payload["renewalDate"] = subscription.latest.expiresDate
        }
        if let token = subscription.appAccountToken { payload["appAccountToken"] = token }
        return payload
    }

    private func emit(_ state: inout State, _ original: String, _ type: String, _ subtype: String?, at now: Int64) {
        let subscription = state.subscriptions[original]!
        var payload: [String: any Sendable] = [
            "notificationType": type, "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": now,
        ]
        if let subtype { payload["subtype"] = subtype }
        // Signing cannot fail with the chain this store generated; a failure is a broken build.
        guard let transaction = try? sign(transactionPayload(subscription, subscription.latest, signedAt: now)),
            let renewal = try? sign(renewalPayload(subscription, signedAt: now))
        else { preconditionFailure("the simulator's signing chain could not sign") }
        var data: [String: any Sendable] = [
            "bundleId": configuration.bundleID, "bundleVersion": "1.0", "environment": configuration.environment,
            "signedTransactionInfo": transaction, "signedRenewalInfo": renewal, "status": subscription.status,
        ]
        // Apple leaves appAppleId out in the sandbox.
        if configuration.environment == "Production" { data["appAppleId"] = configuration.appAppleID }
        payload["data"] = data
        guard let signed = try? sign(payload) else {
            preconditionFailure("the simulator's signing chain could not sign")
        }
        let notification = SentNotification(
            uuid: payload["notificationUUID"] as! String, type: type, subtype: subtype,
            originalTransactionID: original, signedDate: now, signedPayload: signed)
        state.outbox.append(notification)
        state.sent.append(notification)
    }

    private func sign(_ payload: [String: any Sendable]) throws(SimError) -> String {
        do {
            return try chain.sign(payload)
        } catch {
            throw SimError(.conflict, "signing failed: \(error)")
        }
    }

    // MARK: Helpers

    private func product(_ id: String) throws(SimError) -> AppleSimProduct {
        guard let product = configuration.products.first(where: { $0.id == id }) else {
            throw SimError(.notFound, "no product \(id)")
        }
        return product
    }

    private static func original(_ id: String, in state: State) throws(SimError) -> String {
        guard let original = state.owners[id] else { throw SimError(.notFound, "no transaction \(id)") }
        return original
    }

    private static func nextID(_ state: inout State) -> String {
        defer { state.nextID += 1 }
        return String(state.nextID)
    }

    private func change<T>(_ body: (inout State, Int64) throws(SimError) -> T) throws(SimError) -> T {
        let now = clock.now
        return try state.withLock { state throws(SimError) -> T in try body(&state, now) }
    }

    private func read<T>(_ body: (State, Int64) throws(SimError) -> T) throws(SimError) -> T {
        let now = clock.now
        return try state.withLock { state throws(SimError) -> T in try body(state, now) }
    }
}
