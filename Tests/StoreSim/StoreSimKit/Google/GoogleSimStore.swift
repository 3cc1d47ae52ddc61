public import Foundation
import Synchronization

/// The simulated Google Play: purchase tokens whose subscriptions (one or more line items on one
/// billing period, auto-renewing or prepaid) renew with a new order each time, fall into grace
/// and account hold, recover, pause and resume, are cancelled item by item, restarted, replaced
/// through `linkedPurchaseToken` at once, after a slow payment or at the period's end; one-time
/// products bought in a quantity; any order refunded in full or by units; and purchases refunded
/// by Google when nobody acknowledges them in time. Every change is a Real-time developer
/// notification in `outbox`; the Play Developer API (`GoogleSimAPI`) reads the same state.
///
/// Where Play's behaviour is not certain the simulator does the harsher thing, with a note of
/// what it relied on next to the code.
public final class GoogleSimStore: Sendable {
    public let configuration: GoogleSimConfiguration
    public let clock: SimClock
    let state = Mutex(State())

    /// How a plan change takes effect, as it reaches a backend (Play's replacement modes).
    public enum ChangeMode: String, Sendable, CaseIterable {
        /// Now: a new token with a new initial order replaces the old one, which expires.
        case immediate
        /// Now, but paid by a slow method: the new token reads PENDING, the old one runs on as it
        /// was, until `completePending` (then as `immediate`) or `cancelPending`.
        case pending
        /// At the old period's end: the new token is issued now, the old one stops renewing and
        /// keeps access to its end, when the new token's first order is charged.
        case deferred
    }

    /// One order: a subscription's initial purchase, one of its renewals or top-ups, or a
    /// one-time purchase.
    public struct Order: Sendable, Equatable {
        /// `GPA.…` for the first order of a token, `GPA.…..0`, `..1`, … for the ones after it.
        public let id: String
        public let purchaseToken: String
        /// The products (line items) it pays for.
        public let productIDs: [String]
        /// When it was charged (epoch ms).
        public let chargedAt: Int64
        /// The period it pays for; a one-time purchase starts at its purchase and has no end.
        public let start: Int64
        public let end: Int64?
        /// Units bought (1 for a subscription).
        public let quantity: Int
        /// Units refunded so far.
        public internal(set) var voidedQuantity = 0
        /// When the order was voided in full (nil while any unit stands).
        public internal(set) var voidedAt: Int64?
        /// When the developer refunded it (`orders.refund`, `subscriptionsv2.revoke`).
        public internal(set) var refundedAt: Int64?
    }

    /// A notification as made: its Pub/Sub message id, the notification JSON and when.
    public struct Message: Sendable {
        public let id: String
        public let notification: Data
        public let eventTime: Int64
        /// `subscription <code>`, `oneTime <code>` or `voided`.
        public let kind: String
    }

    /// One entry of the voided purchases list.
    public struct Voided: Sendable {
        let token: String
        let orderID: String
        /// When the voided order was charged.
        let purchaseTime: Int64
        let voidedTime: Int64
        /// 1 a subscription, 2 a one-time product.
        let productType: Int
        /// 1 in full, 2 some units of a one-time product.
        let refundType: Int
        /// Units voided by a quantity-based partial refund (nil for a full one).
        let voidedQuantity: Int?
        /// 0 user, 1 developer, 2 Google.
        let source: Int
        /// Google's `voidedReason` code (8: the purchase was never acknowledged).
        let reason: Int
    }

    enum Phase: Sendable, Equatable {
        case active
        /// Renewal off; access lasts until the expiry.
        case canceled
        case grace(until: Int64)
        case onHold(until: Int64)
        case paused(resumeAt: Int64)
        case expired
        /// Waiting for a slow payment: no order, no access.
        case pending
        /// The slow payment never came.
        case pendingCanceled
        /// Issued by a deferred plan change: its first order is charged at `startsAt`.
        case deferred(startsAt: Int64)
    }

    /// How a purchase came to an end, for `canceledStateContext`.
    enum Ending: Sendable, Equatable {
        case user(at: Int64)
        case system
        case developer
        case replacement
    }

    /// One line item: a product on the subscription's billing period.
    struct Item: Sendable, Equatable {
        var productID: String
        var basePlanID: String
        var prepaid: Bool
        var autoRenew: Bool
    }

    struct Purchase: Sendable {
        let token: String
        var items: [Item]
        /// When the subscription was granted (a pending one: when it was asked for).
        var startTime: Int64
        /// The end of the period all items share (in grace: the grace end).
        var expiry: Int64
        var phase: Phase
        var paymentFails = false
        /// A pause the customer scheduled: its length, starting at the next renewal.
        var scheduledPause: Int64?
        var acknowledged = false
        let linkedPurchaseToken: String?
        var ending: Ending?
        let orderBase: String
        /// Every order charged, oldest first.
        var orders: [Order] = []
        let obfuscatedAccountID: String?
        let test: Bool
        var revoked: Int64?
        /// The renewal date that failed, while in grace (the grace end is `expiry` then).
        var failedRenewal: Int64?
        /// The token a deferred plan change issued, which takes over at `expiry`.
        var deferredReplacement: String?

        init(
            token: String, items: [Item], startTime: Int64, phase: Phase, linkedPurchaseToken: String?,
            orderBase: String, obfuscatedAccountID: String?, test: Bool
        ) {
            self.token = token
            self.items = items
            self.startTime = startTime
            self.expiry = startTime
            self.phase = phase
            self.linkedPurchaseToken = linkedPurchaseToken
            self.orderBase = orderBase
            self.obfuscatedAccountID = obfuscatedAccountID
            self.test = test
        }

        /// The subscription id notifications name: the first line item's product.
        var productID: String { items.first?.productID ?? "" }
        var prepaid: Bool { items.first?.prepaid ?? false }
        var renews: Bool { items.contains(where: \.autoRenew) }
        /// The id the next order gets.
        var nextOrderID: String { GoogleSimStore.orderID(orderBase, orders.count) }
        /// Whether the token is in a period that started (access or no access), not ended for good.
        var live: Bool {
            switch phase {
            case .active, .canceled, .grace, .onHold, .paused: true
            case .expired, .pending, .pendingCanceled, .deferred: false
            }
        }
    }

    struct OneTimePurchase: Sendable {
        let token: String
        let productID: String
        let quantity: Int
        let purchaseTime: Int64
        /// `purchaseState`: 0 purchased, 1 canceled, 2 pending.
        var purchaseState: Int
        var consumed = false
        var acknowledged = false
        let orderID: String
        /// The order, once paid.
        var order: Order?
        let obfuscatedAccountID: String?
        let test: Bool
    }

    struct State: Sendable {
        /// Subscriptions by token; every write is noted for `due`.
        var purchases: WatchedDictionary<String, Purchase> = [:]
        /// One-time purchases by token; every write is noted for `due`.
        var oneTime: WatchedDictionary<String, OneTimePurchase> = [:]
        /// When each token of either is next due to change by itself.
        var due = DueQueue<String>()
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

    /// A purchase of `productID` with `addOns` (more products on the same billing period, each a
    /// line item of its own); returns its purchase token. With `linkedPurchaseToken`, a re-signup
    /// or an immediate plan change replacing that token (which then expires, RTDN 13). `test`
    /// overrides the configuration's `testPurchases`. Throws `.notFound` for an unknown product
    /// or token, `.badRequest` for add-ons that cannot share the period.
    public func buy(
        productID: String, addOns: [String] = [], obfuscatedAccountID: String? = nil,
        linkedPurchaseToken: String? = nil, test: Bool? = nil
    ) throws(SimError) -> String {
        let items = try lineItems([productID] + addOns)
        return try change { state, now throws(SimError) in
            if let linked = linkedPurchaseToken { _ = try Self.purchase(linked, in: state) }
            let token = Self.newToken()
            var purchase = Purchase(
                token: token, items: items, startTime: now, phase: .active, linkedPurchaseToken: linkedPurchaseToken,
                orderBase: Self.newOrderBase(&state), obfuscatedAccountID: obfuscatedAccountID,
                test: test ?? configuration.testPurchases)
            try charge(&purchase, at: now, from: now)
            state.purchases[token] = purchase
            emit(&state, token, 4, at: now)
            if let linked = linkedPurchaseToken, state.purchases[linked]!.live {
                replace(&state, linked, at: now)
                emit(&state, linked, 13, at: now)
            }
            return token
        }
    }

    /// The app acknowledges the purchase (the API's `:acknowledge`). Throws `.badRequest` when
    /// the token is not a purchase of `productID`, `.conflict` for a purchase still pending.
    func acknowledge(_ token: String, productID: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            guard purchase.items.contains(where: { $0.productID == productID }) else {
                throw SimError(.badRequest, "the token is not a purchase of \(productID)")
            }
            guard !purchase.orders.isEmpty else { throw SimError(.conflict, "the purchase is not paid yet") }
            state.purchases[token]!.acknowledged = true
        }
    }

    /// Renewal off for every line item: access lasts until the expiry (RTDN 3).
    public func cancel(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            guard purchase.phase == .active, !purchase.prepaid, purchase.deferredReplacement == nil else {
                throw SimError(.conflict, "the subscription is not active and renewing")
            }
            cancelRenewal(&state, token, at: now)
        }
    }

    /// Renewal off for the line item `productID` only: it keeps access to the period's end and is
    /// gone from `lineItems` after the next renewal. When no item renews any more the
    /// subscription is cancelled (RTDN 3).
    public func cancelAddOn(_ token: String, productID: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            guard purchase.phase == .active, !purchase.prepaid, purchase.deferredReplacement == nil else {
                throw SimError(.conflict, "the subscription is not active and renewing")
            }
            guard let index = purchase.items.firstIndex(where: { $0.productID == productID && $0.autoRenew }) else {
                throw SimError(.notFound, "no renewing line item \(productID) on the subscription")
            }
            if purchase.items.filter(\.autoRenew).count == 1 { return cancelRenewal(&state, token, at: now) }
            // Whether Play notifies one item's renewal turned off is not documented: the harsher
            // case, no notification until the renewal leaves the item out.
            state.purchases[token]!.items[index].autoRenew = false
        }
    }

    /// A cancelled subscription is turned back on before it expires (RTDN 7): every line item
    /// still on it renews again.
    public func restart(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            guard try Self.purchase(token, in: state).phase == .canceled else {
                throw SimError(.conflict, "the subscription is not cancelled")
            }
            for index in state.purchases[token]!.items.indices { state.purchases[token]!.items[index].autoRenew = true }
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

    /// The customer fixes their payment: a subscription in grace or on hold is charged now, with
    /// the renewal order that failed (`latestOrderId` named it meanwhile), and starts a new period
    /// (RTDN 1).
    public func recover(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            state.purchases[token]!.paymentFails = false
            switch purchase.phase {
            case .grace, .onHold:
                // Within grace the period runs from the renewal date that failed (no paid day
                // is lost); from account hold it starts now.
                let from = Self.isOnHold(purchase) ? now : (purchase.failedRenewal ?? now)
                state.purchases[token]!.items.removeAll { !$0.autoRenew }
                try charge(&state.purchases[token]!, at: now, from: from)
                state.purchases[token]!.failedRenewal = nil
                emit(&state, token, 1, at: now)
            default: break
            }
        }
    }

    /// The customer schedules a pause of `length` ms, from the next renewal on (RTDN 11).
    public func pause(_ token: String, length: Int64) throws(SimError) {
        try change { state, now throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            guard purchase.phase == .active, !purchase.prepaid, purchase.deferredReplacement == nil, length > 0
            else {
                throw SimError(.conflict, "only an active renewing subscription can be paused, for a positive length")
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

    /// A top-up of a prepaid plan: a new order that extends the expiry by one period (RTDN 2).
    /// Throws `.conflict` for a plan that is not prepaid, has expired, or is already extended
    /// (Play allows one top-up after `allowExtendAfterTime`).
    public func topUp(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let purchase = try Self.purchase(token, in: state)
            guard purchase.prepaid, purchase.phase == .active else {
                throw SimError(.conflict, "only a prepaid plan that has not expired can be topped up")
            }
            guard Self.allowExtendAfterTime(purchase, now: now) != nil else {
                throw SimError(.conflict, "the prepaid plan is already extended by a top-up")
            }
            try charge(&state.purchases[token]!, at: now, from: purchase.expiry)
            // A top-up here keeps the token and adds an order, as a renewal does: RENEWED is the
            // notification for a new order that extends a token's expiry.
            emit(&state, token, 2, at: now)
        }
    }

    /// A plan change to `productID`: at once (a new token replacing this one through
    /// `linkedPurchaseToken`; returns it) or at the next renewal (returns nil; the new token is
    /// issued now, `changeProduct(_:to:mode:)` returns it).
    public func changeProduct(_ token: String, to productID: String, immediately: Bool) throws(SimError) -> String? {
        let next = try changeProduct(token, to: productID, mode: immediately ? .immediate : .deferred)
        return immediately ? next : nil
    }

    /// A plan change of the subscription's first line item to `productID` (its renewing add-ons
    /// come along) in `mode`; returns the new token, which names this one in
    /// `linkedPurchaseToken`. Throws `.conflict` unless the subscription is active, renewing and
    /// not prepaid.
    ///
    /// - `immediate`: the new token is ACTIVE with a new initial order (RTDN 4); this one reads
    ///   EXPIRED with `replacementCancellation` and `expiryTime` now (RTDN 13).
    /// - `pending`: the new token reads PENDING with no order; this one stays exactly as it was.
    /// - `deferred`: the new token starts now with no order, its line item showing this one's
    ///   plan with `deferredItemReplacement` naming `productID`; this one stops renewing and keeps
    ///   access to its period's end, when it expires (RTDN 13) and the new token gets its first
    ///   order and period, and shows its own plan, from there (RTDN 4).
    public func changeProduct(_ token: String, to productID: String, mode: ChangeMode) throws(SimError) -> String {
        let replacement = try lineItems([productID])[0]
        return try change { state, now throws(SimError) in
            let old = try Self.purchase(token, in: state)
            guard old.phase == .active, !old.prepaid, old.deferredReplacement == nil, !replacement.prepaid else {
                throw SimError(.conflict, "the subscription is not active and renewing")
            }
            let items = [replacement] + old.items.dropFirst().filter { $0.autoRenew && $0.productID != productID }
            let next = Self.newToken()
            var purchase = Purchase(
                token: next, items: items, startTime: now, phase: .active, linkedPurchaseToken: token,
                orderBase: Self.newOrderBase(&state), obfuscatedAccountID: old.obfuscatedAccountID, test: old.test)
            switch mode {
            case .immediate:
                try charge(&purchase, at: now, from: now)
                state.purchases[next] = purchase
                emit(&state, next, 4, at: now)
                replace(&state, token, at: now)
                emit(&state, token, 13, at: now)
            case .pending:
                // Play notifies a subscription purchase once it is paid: nothing is sent while it
                // is pending.
                purchase.phase = .pending
                state.purchases[next] = purchase
            case .deferred:
                // Play sends nothing at a deferred change (reports say the first notification
                // comes with the new plan's first charge): the old token keeps access to its end.
                purchase.phase = .deferred(startsAt: old.expiry)
                purchase.expiry = old.expiry
                state.purchases[next] = purchase
                for index in old.items.indices { state.purchases[token]!.items[index].autoRenew = false }
                state.purchases[token]!.deferredReplacement = next
            }
            return next
        }
    }

    /// The slow payment of a pending purchase arrives: a pending plan change becomes the
    /// immediate one at this moment (RTDN 4 for this token, 13 for the one it replaces), a
    /// pending one-time purchase becomes purchased (one-time RTDN 1). Throws `.conflict` when
    /// the purchase is not pending.
    public func completePending(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            if state.oneTime[token] != nil { return try completeOneTime(&state, token, at: now) }
            guard try Self.purchase(token, in: state).phase == .pending else {
                throw SimError(.conflict, "the purchase is not pending")
            }
            // Google: startTime is "not set for pending subscriptions"; it is the grant, now.
            state.purchases[token]!.startTime = now
            try charge(&state.purchases[token]!, at: now, from: now)
            emit(&state, token, 4, at: now)
            if let linked = state.purchases[token]!.linkedPurchaseToken, state.purchases[linked]?.live == true {
                replace(&state, linked, at: now)
                emit(&state, linked, 13, at: now)
            }
        }
    }

    /// The slow payment of a pending purchase never comes: a pending plan change reads
    /// PENDING_PURCHASE_CANCELED (RTDN 20) and the token it would have replaced is untouched; a
    /// pending one-time purchase is cancelled (one-time RTDN 2). Throws `.conflict` when the
    /// purchase is not pending.
    public func cancelPending(_ token: String) throws(SimError) {
        try change { state, now throws(SimError) in
            if state.oneTime[token] != nil { return try cancelOneTime(&state, token, at: now) }
            guard try Self.purchase(token, in: state).phase == .pending else {
                throw SimError(.conflict, "the purchase is not pending")
            }
            state.purchases[token]!.phase = .pendingCanceled
            emit(&state, token, 20, at: now)
        }
    }

    // MARK: Changes

    /// Charges the next order of `purchase` at `now` for the period from `from`; the purchase
    /// is active until that period's end.
    func charge(_ purchase: inout Purchase, at now: Int64, from: Int64) throws(SimError) {
        let product = try product(purchase.productID)
        let end = product.end(from: from)
        purchase.orders.append(
            Order(
                id: purchase.nextOrderID, purchaseToken: purchase.token, productIDs: purchase.items.map(\.productID),
                chargedAt: now, start: from, end: end, quantity: 1))
        purchase.expiry = end
        purchase.phase = .active
    }

    /// Renewal off for every item of `token` (by the subscriber unless `ending` says otherwise).
    func cancelRenewal(_ state: inout State, _ token: String, at now: Int64, ending: Ending? = nil) {
        for index in state.purchases[token]!.items.indices { state.purchases[token]!.items[index].autoRenew = false }
        state.purchases[token]!.phase = .canceled
        state.purchases[token]!.ending = ending ?? .user(at: now)
        emit(&state, token, 3, at: now)
    }

    func resumeNow(_ state: inout State, _ token: String, at now: Int64) throws(SimError) {
        try charge(&state.purchases[token]!, at: now, from: now)
        emit(&state, token, 2, at: now)
    }

    /// `token` ends now because another purchase replaced it.
    func replace(_ state: inout State, _ token: String, at now: Int64) {
        end(&state, token, at: now, ending: .replacement)
    }

    /// `token` ends at `now` (EXPIRED), renewing nothing, for `ending`.
    func end(_ state: inout State, _ token: String, at now: Int64, ending: Ending?) {
        var purchase = state.purchases[token]!
        purchase.phase = .expired
        for index in purchase.items.indices { purchase.items[index].autoRenew = false }
        purchase.ending = ending
        purchase.expiry = min(purchase.expiry, now)
        purchase.scheduledPause = nil
        state.purchases[token] = purchase
    }

    /// The line items for `productIDs`: known subscription products, each once, all on one
    /// billing period; a prepaid plan has no add-ons.
    func lineItems(_ productIDs: [String]) throws(SimError) -> [Item] {
        var items: [Item] = []
        for id in productIDs {
            let product = try product(id)
            guard !items.contains(where: { $0.productID == id }) else {
                throw SimError(.badRequest, "\(id) is on the subscription twice")
            }
            items.append(Item(productID: id, basePlanID: product.basePlanID, prepaid: product.prepaid, autoRenew: true))
        }
        if items.count > 1 {
            let periods = Set(try items.map { item throws(SimError) in try product(item.productID).period })
            guard periods.count == 1, !items.contains(where: \.prepaid) else {
                throw SimError(.badRequest, "add-ons share the base plan's billing period and are not prepaid")
            }
        }
        return items
    }

    // MARK: Helpers

    func product(_ id: String) throws(SimError) -> GoogleSimProduct {
        guard let product = configuration.products.first(where: { $0.id == id }) else {
            throw SimError(.notFound, "no product \(id)")
        }
        return product
    }

    static func purchase(_ token: String, in state: State) throws(SimError) -> Purchase {
        guard let purchase = state.purchases[token] else { throw SimError(.notFound, "no purchase token \(token)") }
        return purchase
    }

    static func isOnHold(_ purchase: Purchase) -> Bool {
        if case .onHold = purchase.phase { return true }
        return false
    }

    /// The order id at `index` of a token: the base first, then `<base>..0`, `..1`, …
    static func orderID(_ base: String, _ index: Int) -> String { index == 0 ? base : "\(base)..\(index - 1)" }

    /// A new order id base, shaped like Play's `GPA.dddd-dddd-dddd-ddddd`.
    static func newOrderBase(_ state: inout State) -> String {
        state.nextOrder += 1
        return "GPA.\(state.nextOrder)-4417-0193-\(10000 + state.nextOrder % 90000)"
    }

    /// A token shaped like Play's: 24 lowercase letters, a dot, then 125 URL-safe base64
    /// characters starting "AO-J1O".
    static func newToken() -> String {
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

    func change<T>(_ body: (inout State, Int64) throws(SimError) -> T) throws(SimError) -> T {
        let now = clock.now
        return try state.withLock { state throws(SimError) -> T in try body(&state, now) }
    }
}
