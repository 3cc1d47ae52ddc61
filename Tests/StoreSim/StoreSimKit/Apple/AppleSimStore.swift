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

        /// The end of one period that starts at `start` (epoch ms), by the UTC calendar. A
        /// period always moves time forward, by a day at least (a renewal at its own start
        /// would repeat forever).
        func end(from start: Int64) -> Int64 {
            var components = DateComponents()
            switch self {
            case .days(let days): components.day = days
            case .months(let months): components.month = months
            case .years(let years): components.year = years
            }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let startDate = Date(timeIntervalSince1970: Double(start) / 1000)
            let end = calendar.date(byAdding: components, to: startDate) ?? startDate
            return max(Int64((end.timeIntervalSince1970 * 1000).rounded()), start + 86_400_000)
        }
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
    func end(from start: Int64) -> Int64 { period.end(from: start) }
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
    /// The consumables, non-consumables and non-renewing subscriptions on sale.
    public var oneTimeProducts: [AppleSimOneTimeProduct]
    /// The longest time before a period's end at which its renewal is charged, in ms: each
    /// renewal is charged at a moment drawn from [`expiresDate` − this, `expiresDate`), never in
    /// the first half of the period; 0 charges exactly at `expiresDate`. Apple charges up to 24
    /// hours early, the default.
    public var renewalLeadMilliseconds: Int64
    /// The seed of those draws: the same seed and the same script give the same charge moments.
    public var renewalSeed: UInt64
    /// The storefront every purchase is made in (Apple's three-letter country code and its id)
    /// and the currency of its prices.
    public var storefront = "USA"
    public var storefrontID = "143441"
    public var currency = "USD"

    public init(
        bundleID: String, appAppleID: Int64, environment: String = "Sandbox", gracePeriodDays: Int? = 16,
        products: [AppleSimProduct], oneTimeProducts: [AppleSimOneTimeProduct] = [],
        renewalLeadMilliseconds: Int64 = 86_400_000, renewalSeed: UInt64 = 0x5EED_0001
    ) {
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
        self.gracePeriodDays = gracePeriodDays
        self.products = products
        self.oneTimeProducts = oneTimeProducts
        self.renewalLeadMilliseconds = max(0, renewalLeadMilliseconds)
        self.renewalSeed = renewalSeed
    }
}

/// The simulated App Store: subscriptions that renew, fail to renew, recover, expire, are
/// refunded, extended, upgraded and downgraded as the clock moves and customers act, and
/// one-time purchases that are bought and refunded; every change is a signed App Store Server
/// Notification V2 in `outbox`, and the App Store Server API reads the same state
/// (`AppleSimAPI`).
///
/// Apple's behaviour it relies on (App Store Server API and Notifications V2 documentation):
/// - Apple charges a renewal before the period ends, up to 24 hours early. The renewal
///   transaction's `purchaseDate` is the old `expiresDate` (the start of the new period) and
///   DID_RENEW, with the transaction and renewal info in it, is signed at the charge, so its
///   `signedDate` comes before that `purchaseDate`.
/// - A billing failure shows at the end of the paid period: `isInBillingRetryPeriod` means Apple
///   is retrying an expired subscription, and the grace period runs from the old `expiresDate`.
/// - A notification's `signedTransactionInfo` is the transaction the event is about; for REFUND,
///   REFUND_REVERSED, REFUND_DECLINED and CONSUMPTION_REQUEST that can be any transaction of the
///   chain. `data.status` is the status of the subscription when the notification is signed.
/// - CONSUMPTION_REQUEST comes for consumables and auto-renewable subscriptions only; Family
///   Sharing covers non-consumables and auto-renewable subscriptions only.
/// - One-time purchases (consumables, non-consumables, non-renewing subscriptions) send
///   ONE_TIME_CHARGE with `signedTransactionInfo` and no renewal info or `status`; a
///   non-renewing subscription has no `expiresDate`.
/// - Offers: `offerType` 1 introductory, 2 promotional, 3 offer code, 4 win-back, with
///   `offerDiscountType` and (not for 1) `offerIdentifier`. A first purchase with any offer is
///   SUBSCRIBED/INITIAL_BUY; a promotional offer or offer code redeemed on an active
///   subscription is OFFER_REDEEMED and applies from the next renewal, which the renewal info
///   announces (`offerType`, `offerIdentifier`, `renewalPrice`).
/// - Extend a Subscription Renewal Date: 1 to 90 days, at most twice in 365 days, only for an
///   active subscription that is not in a free offer period and not family shared; RENEWAL_EXTENDED
///   carries the transaction with its new `expiresDate`.
///
/// Where it is harsher than Apple usually is, or chooses where Apple leaves it open:
/// - Every renewal is charged early, at a moment drawn from the whole window (seeded,
///   `AppleSimConfiguration.renewalSeed`), so a backend sees a transaction whose period has not
///   started yet while the old one still runs.
/// - A refund of the newest transaction revokes the subscription (status 5, no more renewals);
///   a refund of any older one, even the one still in effect while the next period is already
///   charged, revokes only that transaction and leaves the status as it was.
/// - The subscription statuses of a one-time purchase are empty, and the transaction history of
///   an id is its own chain (Apple's covers all the customer's purchases; the simulator has no
///   customers). Offer eligibility (one introductory offer per group, win-back for lapsed
///   subscribers) is not checked.
/// - Where a family-sharing revocation made while a renewal charged early waits puts its
///   `revocationDate` is not documented: on the newest transaction (not started yet) or on the
///   one in force. The simulator does either (`AppleSimRevocationMark`, drawn from the seed
///   unless the caller names one), and the REVOKE carries the transaction it marked.
/// - A billing recovery within grace keeps the failed renewal date as the new period's start
///   but dates the transaction at the recovery; a recovery in billing retry starts the period then.
/// The transaction a family-sharing revocation marks while a renewal charged early waits.
public enum AppleSimRevocationMark: String, Sendable {
    /// The renewal charged early, whose period has not started.
    case newest
    /// The transaction whose period runs now.
    case inForce = "in-force"
}

public final class AppleSimStore: Sendable {
    public let configuration: AppleSimConfiguration
    public let clock: SimClock
    public let chain: AppleSigningChain
    /// The JWS header `chain` signs under (Apple's), JSON and base64url once for every signature.
    private let encodedHeader: String
    let state: Mutex<State>

    /// One purchase of the subscription: the first, or a renewal, or the purchase an upgrade made.
    struct Transaction: Sendable {
        let id: String
        let productID: String
        let purchaseDate: Int64
        /// Later when the renewal date is extended.
        var expiresDate: Int64
        /// `PURCHASE` or `RENEWAL`.
        let reason: String
        let webOrderLineItemID: String
        /// What was charged, in milliunits: the offer's price within an offer.
        let price: Int64
        let offer: AppleSimOffer?
        var revocationDate: Int64?
        /// Set by a refund (0 or 1), not by a Family Sharing revocation.
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

    /// What happens next to a subscription by itself.
    enum Event: Sendable, Equatable {
        /// Apple tries to charge the next period.
        case renewalAttempt
        /// The newest period ends without a renewal.
        case periodEnd
        case graceEnd
        case retryEnd
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
        /// Apple's `expirationIntent`: 1 cancelled by the customer, 2 billing error, 4 not for sale.
        var expirationIntent: Int?
        /// The charge of the newest period's renewal failed; it shows at that period's end.
        var attemptFailed = false
        /// The renewal is not charged before this moment (auto-renew turned back on late, a
        /// refund reversed).
        var attemptNotBefore: Int64 = 0
        /// An offer for the coming renewals, and how many of them it still covers.
        var renewalOffer: AppleSimOffer?
        var renewalOfferPeriods = 0
        /// The phase a refund of the newest transaction ended, for its reversal.
        var phaseBeforeRevocation = Phase.active
        /// When each renewal-date extension was made.
        var extensions: [Int64] = []
        /// The earliest `signedDate` of its data from now on. The clock stands still between
        /// moves, but the App Store's does not: data changed by an extension is signed after
        /// the data signed before it, and the ledger, which orders states by that date and keeps
        /// the harsher of two with the same one, would otherwise keep the earlier expiry.
        var signedNotBefore: Int64 = 0

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

        mutating func append(_ transaction: Transaction) {
            transactions.append(transaction)
            attemptFailed = false
        }
    }

    /// A consumable, non-consumable or non-renewing subscription bought once.
    struct OneTimePurchase: Sendable {
        let id: String
        let product: AppleSimOneTimeProduct
        let purchaseDate: Int64
        var appAccountToken: String?
        let familyShared: Bool
        var revocationDate: Int64?
        var revocationReason: Int?
    }

    /// A notification as sent: its signed body and when it was made.
    public struct SentNotification: Sendable {
        public let uuid: String
        public let type: String
        public let subtype: String?
        public let originalTransactionID: String
        /// The transaction its `signedTransactionInfo` is (not always the newest of the chain).
        public let transactionID: String
        public let signedDate: Int64
        public let signedPayload: String
    }

    /// The outcome of a renewal-date extension, as the API answers it.
    public struct RenewalExtension: Sendable, Equatable {
        public let originalTransactionID: String
        public let webOrderLineItemID: String
        /// The new `expiresDate`, epoch ms.
        public let effectiveDate: Int64
    }

    /// Why a renewal-date extension was refused, as the API tells them apart.
    enum ExtensionRefusal: Error, Equatable {
        case badDays
        case badReason
        case notOriginal
        case familyShared
        case ineligible(String)
        case maximumReached
    }

    struct State: Sendable {
        /// By original transaction id; every write is noted for `due`.
        var subscriptions: WatchedDictionary<String, Subscription> = [:]
        /// When each subscription is next due to change by itself (`nextEvent`).
        var due = DueQueue<String>()
        var purchases: [String: OneTimePurchase] = [:]
        /// Every transaction id (original or not) to its subscription's or purchase's original id.
        var owners: [String: String] = [:]
        var nextID: Int64 = 2_000_000_000_000_001
        var outbox: [SentNotification] = []
        var sent: [SentNotification] = []
        /// The extensions made, by original transaction id and the caller's `requestIdentifier`.
        var extensionRequests: [String: RenewalExtension] = [:]
        /// Mass extensions, by product id and the caller's `requestIdentifier`.
        var massExtensions: [String: MassExtension] = [:]
        /// The consumption information the developer sent, by transaction id, oldest first.
        var consumptionAnswers: [String: [[String: String]]] = [:]
    }

    /// A request to extend every eligible subscriber of a product, worked through a few
    /// subscriptions at a time.
    struct MassExtension: Sendable {
        let productID: String
        let requestIdentifier: String
        let days: Int
        let storefronts: [String]?
        /// The subscriptions still to extend, in order.
        var pending: [String]
        var succeeded: Int64 = 0
        var failed: Int64 = 0
        var completeDate: Int64?
    }

    /// Where a mass extension stands, as Get Status of Subscription Renewal Date Extensions
    /// answers it.
    public struct MassExtensionStatus: Sendable, Equatable {
        public let requestIdentifier: String
        public let complete: Bool
        public let completeDate: Int64?
        public let succeededCount: Int64
        public let failedCount: Int64
    }

    /// Why a mass extension was refused, as the API tells them apart.
    enum MassExtensionRefusal: Error, Equatable {
        case badDays
        case badReason
        case badProduct
        case notFound
    }

    /// Subscriptions a mass extension works through at each step (a status read or a clock move).
    public static let massExtensionBatch = 2

    /// The reasons Apple gives in `consumptionRequestReason`.
    public static let consumptionRequestReasons: Set<String> = [
        "UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER",
    ]

    public init(configuration: AppleSimConfiguration, clock: SimClock, chain: AppleSigningChain) {
        self.configuration = configuration
        self.clock = clock
        self.chain = chain
        // The header is ES256 and three certificates' DER in base64: always JSON.
        encodedHeader = Base64URL.encode(
            try! JSONSerialization.data(withJSONObject: chain.header, options: [.sortedKeys]))
        self.state = Mutex(State())
    }

    // MARK: Customers

    /// A purchase of `productID`, an auto-renewable subscription (optionally with `offer`) or a
    /// one-time product; returns its `originalTransactionId` (for a one-time product also its
    /// `transactionId`). Throws `SimError`: `.notFound` for an unknown product, `.badRequest`
    /// for an `appAccountToken` that is not a UUID, an offer on a one-time product, or Family
    /// Sharing of a product it does not cover.
    public func buy(
        productID: String, appAccountToken: String? = nil, familyShared: Bool = false, offer: AppleSimOffer? = nil
    ) throws(SimError) -> String {
        if let appAccountToken, UUID(uuidString: appAccountToken) == nil {
            throw SimError(.badRequest, "appAccountToken must be a UUID, got \"\(appAccountToken)\"")
        }
        if let oneTime = configuration.oneTimeProducts.first(where: { $0.id == productID }) {
            return try buyOnce(oneTime, appAccountToken: appAccountToken, familyShared: familyShared, offer: offer)
        }
        _ = try product(productID)
        return try change { state, now throws(SimError) in
            let transaction = try makeTransaction(
                &state, productID: productID, purchaseDate: now, periodFrom: now, reason: "PURCHASE", offer: offer)
            let id = transaction.id
            var subscription = Subscription(
                originalTransactionID: id, originalPurchaseDate: now, productID: productID,
                autoRenewProductID: productID, appAccountToken: appAccountToken?.lowercased(),
                familyShared: familyShared, transactions: [transaction])
            if let offer, offer.periods > 1 {
                subscription.renewalOffer = offer
                subscription.renewalOfferPeriods = offer.periods - 1
            }
            state.subscriptions[id] = subscription
            state.owners[id] = id
            emit(&state, id, "SUBSCRIBED", "INITIAL_BUY", at: now)
            return id
        }
    }

    private func buyOnce(
        _ product: AppleSimOneTimeProduct, appAccountToken: String?, familyShared: Bool, offer: AppleSimOffer?
    ) throws(SimError) -> String {
        guard offer == nil else {
            throw SimError(.badRequest, "\(product.id) is a one-time product: subscription offers do not apply")
        }
        guard !familyShared || product.isShareable else {
            throw SimError(.badRequest, "Family Sharing covers non-consumables and subscriptions, not \(product.id)")
        }
        return try change { state, now in
            let id = Self.nextID(&state)
            state.purchases[id] = OneTimePurchase(
                id: id, product: product, purchaseDate: now, appAccountToken: appAccountToken?.lowercased(),
                familyShared: familyShared)
            state.owners[id] = id
            emitOneTime(&state, id, "ONE_TIME_CHARGE", at: now)
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
            let original = try Self.subscription(id, in: state)
            switch state.subscriptions[original]!.phase {
            case .expired, .revoked:
                throw SimError(.conflict, "\(id) has ended: a new purchase would start it again")
            default: break
            }
            guard state.subscriptions[original]!.autoRenew != on else { return }
            state.subscriptions[original]!.autoRenew = on
            // A renewal whose charge moment has passed is charged from now on.
            if on { state.subscriptions[original]!.attemptNotBefore = now }
            emit(
                &state, original, "DID_CHANGE_RENEWAL_STATUS", on ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED",
                at: now)
        }
    }

    /// From now on renewals fail to charge (until `recover`).
    public func failPayment(_ id: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            state.subscriptions[try Self.subscription(id, in: state)]!.paymentFails = true
        }
    }

    /// The customer fixes their payment method: a subscription in grace or billing retry renews
    /// now, and later renewals charge. Within grace no paid day is lost (the new period runs
    /// from the renewal date that failed); in billing retry it runs from now. A renewal whose
    /// charge failed before the period ended is charged now, for the period it was for. A
    /// subscription whose auto-renew is off stays as it is.
    public func recover(_ id: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.subscription(id, in: state)
            state.subscriptions[original]!.paymentFails = false
            let subscription = state.subscriptions[original]!
            guard subscription.autoRenew else { return }
            let end = subscription.latest.expiresDate
            switch subscription.phase {
            case .grace:
                try renew(&state, original, at: now, purchaseDate: now, from: end, subtype: "BILLING_RECOVERY")
            case .billingRetry:
                try renew(&state, original, at: now, purchaseDate: now, from: now, subtype: "BILLING_RECOVERY")
            case .active where subscription.attemptFailed:
                try renew(&state, original, at: now, purchaseDate: end, from: end, subtype: nil)
            default: break
            }
        }
    }

    /// Apple refunds the transaction `transactionID`, any of its chain or a one-time purchase;
    /// REFUND names it, with `revocationDate` now and `revocationReason` `reason` (0 another
    /// reason, 1 an issue in the app). Refunding the newest transaction of a subscription
    /// revokes the subscription (status 5); refunding an older one leaves its status as it is.
    /// Throws `SimError`: `.notFound` for an unknown transaction, `.badRequest` for a reason
    /// other than 0 or 1, `.conflict` when it is already revoked.
    public func refund(_ transactionID: String, reason: Int = 0) throws(SimError) {
        guard reason == 0 || reason == 1 else {
            throw SimError(.badRequest, "revocationReason is 0 or 1, got \(reason)")
        }
        try change { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            if let purchase = state.purchases[original] {
                guard purchase.revocationDate == nil else {
                    throw SimError(.conflict, "\(transactionID) is already revoked")
                }
                state.purchases[original]!.revocationDate = now
                state.purchases[original]!.revocationReason = reason
                emitOneTime(&state, original, "REFUND", at: now)
                return
            }
            let index = try Self.index(of: transactionID, in: state.subscriptions[original]!)
            guard state.subscriptions[original]!.transactions[index].revocationDate == nil else {
                throw SimError(.conflict, "\(transactionID) is already revoked")
            }
            state.subscriptions[original]!.transactions[index].revocationDate = now
            state.subscriptions[original]!.transactions[index].revocationReason = reason
            if index == state.subscriptions[original]!.transactions.count - 1 {
                state.subscriptions[original]!.phaseBeforeRevocation = state.subscriptions[original]!.phase
                state.subscriptions[original]!.phase = .revoked
            }
            emit(&state, original, "REFUND", nil, at: now, naming: transactionID)
        }
    }

    /// Apple takes the refund of `transactionID` back: the transaction counts again (REFUND_REVERSED
    /// names it). When it is the newest of its subscription, the subscription returns to where
    /// the refund found it, unless that has ended since. Throws `SimError`: `.notFound`, or
    /// `.conflict` when the transaction is not refunded.
    public func reverseRefund(_ transactionID: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            if let purchase = state.purchases[original] {
                guard purchase.revocationReason != nil else {
                    throw SimError(.conflict, "\(transactionID) is not refunded")
                }
                state.purchases[original]!.revocationDate = nil
                state.purchases[original]!.revocationReason = nil
                emitOneTime(&state, original, "REFUND_REVERSED", at: now)
                return
            }
            var subscription = state.subscriptions[original]!
            let index = try Self.index(of: transactionID, in: subscription)
            guard subscription.transactions[index].revocationReason != nil else {
                throw SimError(.conflict, "\(transactionID) is not refunded")
            }
            subscription.transactions[index].revocationDate = nil
            subscription.transactions[index].revocationReason = nil
            if index == subscription.transactions.count - 1, subscription.phase == .revoked {
                switch subscription.phaseBeforeRevocation {
                case .active where subscription.latest.expiresDate > now: subscription.phase = .active
                case .grace(let until) where until > now: subscription.phase = .grace(until: until)
                case .billingRetry(let until) where until > now: subscription.phase = .billingRetry(until: until)
                default: subscription.phase = .expired
                }
                subscription.attemptNotBefore = now
            }
            state.subscriptions[original] = subscription
            emit(&state, original, "REFUND_REVERSED", nil, at: now, naming: transactionID)
        }
    }

    /// Apple declines a refund the customer asked for: REFUND_DECLINED names `transactionID`.
    /// Throws `SimError`: `.notFound`, or `.conflict` when it is already revoked.
    public func declineRefund(_ transactionID: String) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            try Self.requireNotRevoked(transactionID, original, in: state)
            if state.purchases[original] != nil {
                emitOneTime(&state, original, "REFUND_DECLINED", at: now)
            } else {
                emit(&state, original, "REFUND_DECLINED", nil, at: now, naming: transactionID)
            }
        }
    }

    /// A customer asked for a refund of `transactionID` and Apple asks the app for consumption
    /// information: CONSUMPTION_REQUEST names the transaction, with `consumptionRequestReason`.
    /// Throws `SimError`: `.notFound`; `.badRequest` for a reason Apple does not send
    /// (`consumptionRequestReasons`); `.conflict` for a transaction already revoked, or a
    /// non-consumable or non-renewing subscription (Apple asks only about consumables and
    /// auto-renewable subscriptions).
    public func requestConsumption(_ transactionID: String, reason: String = "UNINTENDED_PURCHASE") throws(SimError) {
        guard Self.consumptionRequestReasons.contains(reason) else {
            throw SimError(.badRequest, "consumptionRequestReason \"\(reason)\" is not one Apple sends")
        }
        try change { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            try Self.requireNotRevoked(transactionID, original, in: state)
            let extra: [String: any Sendable] = ["consumptionRequestReason": reason]
            if let purchase = state.purchases[original] {
                guard purchase.product.kind == .consumable else {
                    throw SimError(.conflict, "Apple asks about consumption of consumables and subscriptions only")
                }
                emitOneTime(&state, original, "CONSUMPTION_REQUEST", at: now, extra: extra)
            } else {
                emit(&state, original, "CONSUMPTION_REQUEST", nil, at: now, naming: transactionID, extra: extra)
            }
        }
    }

    /// A family member loses access to a family-shared purchase (a subscription or a
    /// non-consumable): REVOKE. While a renewal charged early waits to start, the revocation
    /// date goes on `marking` (drawn from the seed when nil, the same every run); otherwise on
    /// the newest transaction, which is then the one in force. The notification carries the
    /// transaction marked.
    public func revokeFamilySharing(_ id: String, marking: AppleSimRevocationMark? = nil) throws(SimError) {
        try change { state, now throws(SimError) in
            let original = try Self.original(id, in: state)
            if let purchase = state.purchases[original] {
                guard purchase.familyShared else { throw SimError(.conflict, "\(id) is not a family-shared purchase") }
                guard purchase.revocationDate == nil else { throw SimError(.conflict, "\(id) is already revoked") }
                state.purchases[original]!.revocationDate = now
                emitOneTime(&state, original, "REVOKE", at: now)
                return
            }
            guard state.subscriptions[original]!.familyShared else {
                throw SimError(.conflict, "\(id) is not a family-shared purchase")
            }
            guard state.subscriptions[original]!.phase != .revoked else {
                throw SimError(.conflict, "\(id) is already revoked")
            }
            let transactions = state.subscriptions[original]!.transactions
            var marked = transactions.count - 1
            if let inForce = transactions.lastIndex(where: { $0.purchaseDate <= now }), inForce < marked,
                (marking ?? drawnMark(transactions[marked].id)) == .inForce
            {
                marked = inForce
            }
            state.subscriptions[original]!.transactions[marked].revocationDate = now
            state.subscriptions[original]!.phaseBeforeRevocation = state.subscriptions[original]!.phase
            state.subscriptions[original]!.phase = .revoked
            emit(&state, original, "REVOKE", nil, at: now, naming: transactions[marked].id)
        }
    }

    /// Which transaction a family-sharing revocation marks while a renewal charged early waits,
    /// drawn from the seed and the waiting transaction's id.
    private func drawnMark(_ waiting: String) -> AppleSimRevocationMark {
        var generator = SplitMix64(seed: configuration.renewalSeed ^ ~(UInt64(waiting) ?? 0))
        return Bool.random(using: &generator) ? .inForce : .newest
    }

    /// The customer moves to `productID` in the same group, as Apple rules it: to a higher level,
    /// or to the same level with the same period, at once (UPGRADE: the current transaction is
    /// marked upgraded and a new one starts now); to a lower level, or the same level with
    /// another period, at the next renewal (DOWNGRADE); back to the current product, which
    /// cancels a pending change (no subtype). A change drops an offer redeemed for the coming
    /// renewals.
    public func changeProduct(_ id: String, to productID: String) throws(SimError) {
        let target = try product(productID)
        try change { state, now throws(SimError) in
            let original = try Self.subscription(id, in: state)
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
                return
            }
            state.subscriptions[original]!.renewalOffer = nil
            state.subscriptions[original]!.renewalOfferPeriods = 0
            if target.level < current.level || (target.level == current.level && target.period == current.period) {
                let last = state.subscriptions[original]!.transactions.count - 1
                state.subscriptions[original]!.transactions[last].isUpgraded = true
                let transaction = try makeTransaction(
                    &state, productID: productID, purchaseDate: now, periodFrom: now, reason: "PURCHASE", offer: nil)
                state.owners[transaction.id] = original
                state.subscriptions[original]!.append(transaction)
                state.subscriptions[original]!.productID = productID
                state.subscriptions[original]!.autoRenewProductID = productID
                emit(&state, original, "DID_CHANGE_RENEWAL_PREF", "UPGRADE", at: now)
            } else {
                state.subscriptions[original]!.autoRenewProductID = productID
                emit(&state, original, "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", at: now)
            }
        }
    }

    /// An active subscriber redeems a promotional offer or an offer code: OFFER_REDEEMED now,
    /// and the offer applies from the next renewal for its periods (the renewal info shows it).
    /// Throws `SimError`: `.badRequest` for an introductory or win-back offer, `.conflict` when
    /// the subscription is not active.
    public func redeemOffer(_ id: String, _ offer: AppleSimOffer) throws(SimError) {
        guard offer.kind == .promotional || offer.kind == .offerCode else {
            throw SimError(.badRequest, "an active subscriber redeems promotional offers and offer codes only")
        }
        try change { state, now throws(SimError) in
            let original = try Self.subscription(id, in: state)
            guard state.subscriptions[original]!.phase == .active else {
                throw SimError(.conflict, "\(id) is not active")
            }
            state.subscriptions[original]!.renewalOffer = offer
            state.subscriptions[original]!.renewalOfferPeriods = offer.periods
            emit(&state, original, "OFFER_REDEEMED", nil, at: now)
        }
    }

    /// The developer extends the renewal date of the subscription `originalTransactionID` by
    /// `days` (Apple's Extend a Subscription Renewal Date): its newest transaction's
    /// `expiresDate` moves later, and RENEWAL_EXTENDED, signed now, carries it. `reason` is
    /// Apple's `extendReasonCode` (0 undeclared, 1 customer satisfaction, 2 other, 3 service
    /// issue or outage). Throws `SimError`: `.notFound` unless it is an original transaction id
    /// of a subscription; `.badRequest` for days outside 1...90 or another reason; `.conflict`
    /// when Apple would refuse (not active, in a free offer period, family shared, or extended
    /// twice within 365 days already).
    @discardableResult
    public func extendRenewal(_ originalTransactionID: String, days: Int, reason: Int = 0) throws(SimError)
        -> RenewalExtension
    {
        do throws(ExtensionRefusal) {
            return try extend(originalTransactionID, days: days, reason: reason)
        } catch {
            switch error {
            case .badDays: throw SimError(.badRequest, "extendByDays is 1 to 90, got \(days)")
            case .badReason: throw SimError(.badRequest, "extendReasonCode is 0 to 3, got \(reason)")
            case .notOriginal: throw SimError(.notFound, "no original transaction \(originalTransactionID)")
            case .familyShared:
                throw SimError(.conflict, "\(originalTransactionID) is family shared: extend the purchaser's")
            case .ineligible(let why): throw SimError(.conflict, "\(originalTransactionID) \(why)")
            case .maximumReached:
                throw SimError(.conflict, "\(originalTransactionID) was extended twice within 365 days already")
            }
        }
    }

    /// `extendRenewal`, its refusals told apart for the API's error codes.
    /// An extension of the same subscription with a `requestIdentifier` made before answers as it
    /// did then and extends nothing more.
    func extend(_ originalTransactionID: String, days: Int, reason: Int, requestIdentifier: String? = nil)
        throws(ExtensionRefusal) -> RenewalExtension
    {
        guard (1...90).contains(days) else { throw .badDays }
        guard (0...3).contains(reason) else { throw .badReason }
        let now = clock.now
        return try state.withLock { state throws(ExtensionRefusal) -> RenewalExtension in
            if let requestIdentifier,
                let earlier = state.extensionRequests[originalTransactionID + "/" + requestIdentifier]
            {
                return earlier
            }
            let extended = try extendLocked(&state, originalTransactionID, days: days, at: now)
            if let requestIdentifier {
                state.extensionRequests[originalTransactionID + "/" + requestIdentifier] = extended
            }
            return extended
        }
    }

    /// Extends `originalTransactionID` under Apple's rules for one subscription, RENEWAL_EXTENDED
    /// signed now.
    private func extendLocked(_ state: inout State, _ originalTransactionID: String, days: Int, at now: Int64)
        throws(ExtensionRefusal) -> RenewalExtension
    {
        guard let subscription = state.subscriptions[originalTransactionID] else { throw .notOriginal }
        guard !subscription.familyShared else { throw .familyShared }
        guard subscription.phase == .active else { throw .ineligible("is not active") }
        guard subscription.latest.offer?.discount != .freeTrial else {
            throw .ineligible("is in a free offer period")
        }
        guard subscription.extensions.filter({ $0 > now - 365 * 86_400_000 }).count < 2 else {
            throw .maximumReached
        }
        let last = subscription.transactions.count - 1
        state.subscriptions[originalTransactionID]!.transactions[last].expiresDate += Int64(days) * 86_400_000
        state.subscriptions[originalTransactionID]!.extensions.append(now)
        state.subscriptions[originalTransactionID]!.signedNotBefore = now + 1
        emit(&state, originalTransactionID, "RENEWAL_EXTENDED", nil, at: now)
        let latest = state.subscriptions[originalTransactionID]!.latest
        return RenewalExtension(
            originalTransactionID: originalTransactionID, webOrderLineItemID: latest.webOrderLineItemID,
            effectiveDate: latest.expiresDate)
    }

    /// Starts extending every active subscription of `productID` (in `storefronts`, every one
    /// when nil) by `days`, as Extend Subscription Renewal Dates for All Active Subscribers does:
    /// nothing is extended yet; each status read or clock move works through
    /// `massExtensionBatch` subscriptions, each under the rules of a single extension
    /// (RENEWAL_EXTENDED when extended, RENEWAL_EXTENSION/FAILURE when not), and the step that
    /// finds none left completes it with RENEWAL_EXTENSION/SUMMARY. The same `requestIdentifier`
    /// for the same product again starts nothing more.
    func startMassExtension(
        productID: String, days: Int, reason: Int, requestIdentifier: String, storefronts: [String]?
    ) throws(MassExtensionRefusal) {
        guard (1...90).contains(days) else { throw .badDays }
        guard (0...3).contains(reason) else { throw .badReason }
        guard configuration.products.contains(where: { $0.id == productID }) else { throw .badProduct }
        state.withLock { state in
            let key = productID + "/" + requestIdentifier
            guard state.massExtensions[key] == nil else { return }
            let inStorefront = storefronts?.contains(configuration.storefront) ?? true
            let pending =
                inStorefront
                ? state.subscriptions.values.filter { $0.productID == productID && $0.phase == .active }
                    .map(\.originalTransactionID).sorted() : []
            state.massExtensions[key] = MassExtension(
                productID: productID, requestIdentifier: requestIdentifier, days: days, storefronts: storefronts,
                pending: pending)
        }
    }

    /// Where the mass extension `requestIdentifier` of `productID` stands, after one more step of
    /// it; `.notFound` when there is none.
    func massExtensionStatus(productID: String, requestIdentifier: String) throws(MassExtensionRefusal)
        -> MassExtensionStatus
    {
        let now = clock.now
        return try state.withLock { state throws(MassExtensionRefusal) -> MassExtensionStatus in
            let key = productID + "/" + requestIdentifier
            guard state.massExtensions[key] != nil else { throw .notFound }
            stepMassExtension(&state, key, at: now)
            let run = state.massExtensions[key]!
            return MassExtensionStatus(
                requestIdentifier: requestIdentifier, complete: run.completeDate != nil, completeDate: run.completeDate,
                succeededCount: run.succeeded, failedCount: run.failed)
        }
    }

    /// One step of the mass extension `key`: the next `massExtensionBatch` subscriptions, or,
    /// with none left, completion and its SUMMARY.
    private func stepMassExtension(_ state: inout State, _ key: String, at now: Int64) {
        guard var run = state.massExtensions[key], run.completeDate == nil else { return }
        if run.pending.isEmpty {
            run.completeDate = now
            var summary: [String: any Sendable] = [
                "productId": run.productID, "requestIdentifier": run.requestIdentifier,
                "succeededCount": run.succeeded, "failedCount": run.failed,
            ]
            if let storefronts = run.storefronts { summary["storefrontCountryCodes"] = storefronts }
            send(
                &state, "RENEWAL_EXTENSION", "SUMMARY", original: "", transactionID: "", data: summary, at: now,
                as: "summary")
        }
        for original in run.pending.prefix(Self.massExtensionBatch) {
            do throws(ExtensionRefusal) {
                _ = try extendLocked(&state, original, days: run.days, at: now)
                run.succeeded += 1
            } catch {
                run.failed += 1
                emit(&state, original, "RENEWAL_EXTENSION", "FAILURE", at: now)
            }
        }
        run.pending.removeFirst(min(Self.massExtensionBatch, run.pending.count))
        state.massExtensions[key] = run
    }

    /// One step of every mass extension still running.
    private func stepMassExtensions(_ state: inout State, at now: Int64) {
        for key in state.massExtensions.keys.sorted() { stepMassExtension(&state, key, at: now) }
    }

    /// The developer's Send Consumption Information for `transactionID` (its fields as text);
    /// `.notFound` for a transaction the store does not know.
    func answerConsumption(_ transactionID: String, _ fields: [String: String]) throws(SimError) {
        _ = try change { state, _ throws(SimError) in
            _ = try Self.original(transactionID, in: state)
            state.consumptionAnswers[transactionID, default: []].append(fields)
        }
    }

    /// The consumption information sent for `transactionID`, oldest first.
    public func consumptionAnswers(of transactionID: String) -> [[String: String]] {
        state.withLock { $0.consumptionAnswers[transactionID] ?? [] }
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
            while let (original, due, event) = nextDue(in: &state, notAfter: target) {
                step(&state, original, event, at: due)
            }
            // A mass extension moves on a step each time the clock does.
            if target > clock.now { stepMassExtensions(&state, at: target) }
        }
    }

    /// The earliest moment up to `target` something happens by itself, to which subscription,
    /// and what; at an equal moment, the lowest original transaction id first. The subscriptions
    /// written since the last look are queued again at their due moments first, and the one
    /// returned is looked at again next time (its step changes it).
    private func nextDue(in state: inout State, notAfter target: Int64) -> (String, Int64, Event)? {
        let written = state.subscriptions.takeWritten()
        let subscriptions = state.subscriptions
        let due = { (original: String) in subscriptions[original].flatMap { self.nextEvent(of: $0)?.0 } }
        state.due.schedule(written, due: due)
        guard let (original, moment) = state.due.popFirst(notAfter: target, due: due),
            let subscription = subscriptions[original], let (_, event) = nextEvent(of: subscription)
        else { return nil }
        state.subscriptions.noteWritten(original)
        return (original, moment, event)
    }

    private func nextEvent(of subscription: Subscription) -> (Int64, Event)? {
        switch subscription.phase {
        case .active where subscription.autoRenew && !subscription.attemptFailed:
            return (chargeMoment(of: subscription), .renewalAttempt)
        case .active: return (subscription.latest.expiresDate, .periodEnd)
        case .grace(let until): return (until, .graceEnd)
        case .billingRetry(let until): return (until, .retryEnd)
        case .expired, .revoked: return nil
        }
    }

    /// When the renewal of the newest period is charged: its end less a lead drawn from the
    /// seed and the transaction (the same every run), at most `renewalLeadMilliseconds`, never
    /// in the first half of the period nor before `attemptNotBefore`, and never after the end.
    func chargeMoment(of subscription: Subscription) -> Int64 {
        let latest = subscription.latest
        let window = configuration.renewalLeadMilliseconds
        var lead: Int64 = 0
        if window > 0 {
            var generator = SplitMix64(seed: configuration.renewalSeed ^ (UInt64(latest.id) ?? 0))
            lead = Int64.random(in: 1...window, using: &generator)
        }
        let halfway = latest.purchaseDate + (latest.expiresDate - latest.purchaseDate) / 2
        return min(latest.expiresDate, max(latest.expiresDate - lead, halfway, subscription.attemptNotBefore))
    }

    /// What happens to `original` at `now`, when `event` is due.
    private func step(_ state: inout State, _ original: String, _ event: Event, at now: Int64) {
        let subscription = state.subscriptions[original]!
        switch event {
        case .renewalAttempt:
            let end = subscription.latest.expiresDate
            if subscription.paymentFails {
                state.subscriptions[original]!.attemptFailed = true
                return
            }
            do {
                try renew(&state, original, at: now, purchaseDate: end, from: end, subtype: nil)
            } catch {
                // The product it would renew into is gone: the charge fails, and it ends at its end.
                state.subscriptions[original]!.attemptFailed = true
            }
        case .periodEnd where !subscription.autoRenew:
            state.subscriptions[original]!.phase = .expired
            state.subscriptions[original]!.expirationIntent = 1
            emit(&state, original, "EXPIRED", "VOLUNTARY", at: now)
        case .periodEnd where (try? product(subscription.autoRenewProductID)) == nil:
            state.subscriptions[original]!.phase = .expired
            state.subscriptions[original]!.expirationIntent = 4
            emit(&state, original, "EXPIRED", "PRODUCT_NOT_FOR_SALE", at: now)
        case .periodEnd:
            state.subscriptions[original]!.expirationIntent = 2
            state.subscriptions[original]!.attemptFailed = false
            if let days = configuration.gracePeriodDays {
                state.subscriptions[original]!.phase = .grace(until: now + Int64(days) * 86_400_000)
                emit(&state, original, "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: now)
            } else {
                state.subscriptions[original]!.phase = .billingRetry(until: retryEnd(subscription))
                emit(&state, original, "DID_FAIL_TO_RENEW", nil, at: now)
            }
        case .graceEnd:
            state.subscriptions[original]!.phase = .billingRetry(until: retryEnd(subscription))
            emit(&state, original, "GRACE_PERIOD_EXPIRED", nil, at: now)
        case .retryEnd:
            state.subscriptions[original]!.phase = .expired
            emit(&state, original, "EXPIRED", "BILLING_RETRY", at: now)
        }
    }

    private func retryEnd(_ subscription: Subscription) -> Int64 {
        subscription.latest.expiresDate + Int64(configuration.billingRetryDays) * 86_400_000
    }

    /// A renewal into `autoRenewProductID` charged at `now`, dated `purchaseDate`, its period
    /// running from `start`; a redeemed or pay-as-you-go offer still due applies to it.
    private func renew(
        _ state: inout State, _ original: String, at now: Int64, purchaseDate: Int64, from start: Int64,
        subtype: String?
    ) throws(SimError) {
        let subscription = state.subscriptions[original]!
        let offer = subscription.renewalOfferPeriods > 0 ? subscription.renewalOffer : nil
        let transaction = try makeTransaction(
            &state, productID: subscription.autoRenewProductID, purchaseDate: purchaseDate, periodFrom: start,
            reason: "RENEWAL", offer: offer)
        state.owners[transaction.id] = original
        state.subscriptions[original]!.append(transaction)
        state.subscriptions[original]!.productID = transaction.productID
        if offer != nil {
            state.subscriptions[original]!.renewalOfferPeriods -= 1
            if state.subscriptions[original]!.renewalOfferPeriods == 0 {
                state.subscriptions[original]!.renewalOffer = nil
            }
        }
        state.subscriptions[original]!.phase = .active
        state.subscriptions[original]!.expirationIntent = nil
        emit(&state, original, "DID_RENEW", subtype, at: now)
    }

    /// A new transaction of `productID` dated `purchaseDate`, for one period from `periodFrom`
    /// (the offer's period within an offer), at the product's or the offer's price.
    private func makeTransaction(
        _ state: inout State, productID: String, purchaseDate: Int64, periodFrom: Int64, reason: String,
        offer: AppleSimOffer?
    ) throws(SimError) -> Transaction {
        let product = try product(productID)
        return Transaction(
            id: Self.nextID(&state), productID: productID, purchaseDate: purchaseDate,
            expiresDate: offer?.period.end(from: periodFrom) ?? product.end(from: periodFrom), reason: reason,
            webOrderLineItemID: Self.nextID(&state), price: offer?.price ?? product.price, offer: offer)
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

    /// The original transaction id of the subscription or one-time purchase `transactionID`
    /// belongs to.
    public func originalTransactionID(of transactionID: String) -> String? {
        state.withLock { $0.owners[transactionID] }
    }

    /// The transaction ids of the subscription `transactionID` belongs to, oldest first (for a
    /// one-time purchase, its own id). Throws `SimError` (`.notFound`) for an unknown id.
    public func transactionIDs(of transactionID: String) throws(SimError) -> [String] {
        try read { state, _ throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            return state.subscriptions[original]?.transactions.map(\.id) ?? [original]
        }
    }

    /// The transactions of the subscription `transactionID` belongs to, oldest first, as the
    /// control surface lists them: `transactionId`, `productId`, `purchaseDate`, `expiresDate`
    /// and, once revoked, `revocationDate` (epoch ms). Empty for a one-time purchase. Throws
    /// `SimError` (`.notFound`) for an unknown id.
    public func transactionPeriods(of transactionID: String) throws(SimError) -> [[String: any Sendable]] {
        try read { state, _ throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            return state.subscriptions[original]?.transactions.map { transaction in
                var fields: [String: any Sendable] = [
                    "transactionId": transaction.id, "productId": transaction.productID,
                    "purchaseDate": transaction.purchaseDate, "expiresDate": transaction.expiresDate,
                    "orderId": Self.orderID(of: transaction.id),
                ]
                fields["revocationDate"] = transaction.revocationDate
                return fields
            } ?? []
        }
    }

    /// The status the API reports for the subscription `transactionID` belongs to (1 active,
    /// 2 expired, 3 billing retry, 4 grace, 5 revoked); nil for a one-time purchase.
    public func status(of transactionID: String) throws(SimError) -> Int? {
        try read { state, _ throws(SimError) in
            state.subscriptions[try Self.original(transactionID, in: state)]?.status
        }
    }

    /// The signed transaction `transactionID` as it stands now.
    public func signedTransaction(_ transactionID: String) throws(SimError) -> String {
        try read { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            if let purchase = state.purchases[original] { return try sign(oneTimePayload(purchase, signedAt: now)) }
            let subscription = state.subscriptions[original]!
            let transaction = subscription.transactions[try Self.index(of: transactionID, in: subscription)]
            return try sign(transactionPayload(subscription, transaction, signedAt: now))
        }
    }

    /// The API's subscription statuses for the subscription `transactionID` belongs to: its
    /// status, newest transaction and renewal info, signed now (no groups for a one-time purchase).
    public func statuses(_ transactionID: String) throws(SimError) -> [String: any Sendable] {
        try read { state, now throws(SimError) in
            var answer: [String: any Sendable] = [
                "environment": configuration.environment, "bundleId": configuration.bundleID,
                "data": [] as [[String: any Sendable]],
            ]
            // Apple leaves appAppleId out in the sandbox.
            if configuration.environment == "Production" { answer["appAppleId"] = configuration.appAppleID }
            guard let subscription = state.subscriptions[try Self.original(transactionID, in: state)] else {
                return answer
            }
            let group = try product(subscription.productID).group
            let last: [String: any Sendable] = [
                "status": subscription.status,
                "originalTransactionId": subscription.originalTransactionID,
                "signedTransactionInfo": try sign(transactionPayload(subscription, subscription.latest, signedAt: now)),
                "signedRenewalInfo": try sign(renewalPayload(subscription, signedAt: now)),
            ]
            answer["data"] = [
                ["subscriptionGroupIdentifier": group, "lastTransactions": [last]] as [String: any Sendable]
            ]
            return answer
        }
    }

    /// Every transaction of the subscription `transactionID` belongs to, oldest first, signed
    /// now with their revocation as it stands now (a one-time purchase: itself).
    public func history(_ transactionID: String) throws(SimError) -> [String] {
        try read { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            if let purchase = state.purchases[original] { return [try sign(oneTimePayload(purchase, signedAt: now))] }
            let subscription = state.subscriptions[original]!
            var signed: [String] = []
            for transaction in subscription.transactions {
                signed.append(try sign(transactionPayload(subscription, transaction, signedAt: now)))
            }
            return signed
        }
    }

    /// The refunded transactions of the customer `transactionID` belongs to, signed now, by
    /// revocation date (Get Refund History): those of its subscription or its one-time purchase,
    /// the simulator having no customers. A Family Sharing revocation is not a refund.
    public func refundHistory(_ transactionID: String) throws(SimError) -> [String] {
        try read { state, now throws(SimError) in
            let original = try Self.original(transactionID, in: state)
            if let purchase = state.purchases[original] {
                return purchase.revocationReason == nil ? [] : [try sign(oneTimePayload(purchase, signedAt: now))]
            }
            let subscription = state.subscriptions[original]!
            var signed: [String] = []
            for transaction in subscription.transactions
                .filter({ $0.revocationReason != nil })
                .sorted(by: { ($0.revocationDate ?? 0, $0.id) < ($1.revocationDate ?? 0, $1.id) })
            {
                signed.append(try sign(transactionPayload(subscription, transaction, signedAt: now)))
            }
            return signed
        }
    }

    /// The order id of the purchase or renewal `transactionID` as the customer's App Store receipt
    /// shows it: ten uppercase letters and digits (`M` and nine from a digest of the id, an
    /// alphabet without 0, 1, I and O), each transaction an order of its own.
    public static func orderID(of transactionID: String) -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        let digest = Digest.sha256(Array("order \(transactionID)".utf8))
        return "M" + String(digest.prefix(9).map { alphabet[Int($0) % alphabet.count] })
    }

    /// Look Up Order ID: the transaction of order `orderID`, signed now as it stands; nil when no
    /// transaction has that order id (Apple's `status` 1).
    public func orderTransactions(_ orderID: String) throws(SimError) -> [String]? {
        try read { state, now throws(SimError) in
            guard let id = state.owners.keys.first(where: { Self.orderID(of: $0) == orderID }),
                let original = state.owners[id]
            else { return nil }
            if let purchase = state.purchases[original] { return [try sign(oneTimePayload(purchase, signedAt: now))] }
            let subscription = state.subscriptions[original]!
            let transaction = subscription.transactions[try Self.index(of: id, in: subscription)]
            return [try sign(transactionPayload(subscription, transaction, signedAt: now))]
        }
    }

    /// Sets the `appAccountToken` of the purchase `originalTransactionID` (the API's PUT).
    public func setAppAccountToken(_ originalTransactionID: String, _ token: String) throws(SimError) {
        guard UUID(uuidString: token) != nil else {
            throw SimError(.badRequest, "appAccountToken must be a UUID")
        }
        try change { state, _ throws(SimError) in
            if state.purchases[originalTransactionID] != nil {
                state.purchases[originalTransactionID]!.appAccountToken = token.lowercased()
                return
            }
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
            "inAppOwnershipType": subscription.familyShared ? "FAMILY_SHARED" : "PURCHASED",
            "signedDate": max(signedAt, subscription.signedNotBefore),
            "environment": configuration.environment, "transactionReason": transaction.reason,
            "storefront": configuration.storefront, "storefrontId": configuration.storefrontID,
            "price": transaction.price, "currency": configuration.currency,
        ]
        if let token = subscription.appAccountToken { payload["appAccountToken"] = token }
        if let date = transaction.revocationDate { payload["revocationDate"] = date }
        if let reason = transaction.revocationReason { payload["revocationReason"] = reason }
        if transaction.isUpgraded { payload["isUpgraded"] = true }
        if let offer = transaction.offer {
            payload["offerType"] = offer.kind.rawValue
            payload["offerDiscountType"] = offer.discount.rawValue
            if let identifier = offer.identifier { payload["offerIdentifier"] = identifier }
        }
        return payload
    }

    private func oneTimePayload(_ purchase: OneTimePurchase, signedAt: Int64) -> [String: any Sendable] {
        var payload: [String: any Sendable] = [
            "transactionId": purchase.id, "originalTransactionId": purchase.id, "bundleId": configuration.bundleID,
            "productId": purchase.product.id, "purchaseDate": purchase.purchaseDate,
            "originalPurchaseDate": purchase.purchaseDate, "quantity": 1, "type": purchase.product.kind.rawValue,
            "inAppOwnershipType": purchase.familyShared ? "FAMILY_SHARED" : "PURCHASED", "signedDate": signedAt,
            "environment": configuration.environment, "transactionReason": "PURCHASE",
            "storefront": configuration.storefront, "storefrontId": configuration.storefrontID,
            "price": purchase.product.price, "currency": configuration.currency,
        ]
        if let token = purchase.appAccountToken { payload["appAccountToken"] = token }
        if let date = purchase.revocationDate { payload["revocationDate"] = date }
        if let reason = purchase.revocationReason { payload["revocationReason"] = reason }
        return payload
    }

    private func renewalPayload(_ subscription: Subscription, signedAt: Int64) -> [String: any Sendable] {
        var payload: [String: any Sendable] = [
            "originalTransactionId": subscription.originalTransactionID, "productId": subscription.productID,
            "autoRenewProductId": subscription.autoRenewProductID, "autoRenewStatus": subscription.autoRenew ? 1 : 0,
            "signedDate": max(signedAt, subscription.signedNotBefore), "environment": configuration.environment,
            "recentSubscriptionStartDate": subscription.originalPurchaseDate, "currency": configuration.currency,
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
        let offer = subscription.renewalOfferPeriods > 0 ? subscription.renewalOffer : nil
        if let offer {
            payload["offerType"] = offer.kind.rawValue
            payload["offerDiscountType"] = offer.discount.rawValue
            if let identifier = offer.identifier { payload["offerIdentifier"] = identifier }
        }
        if let price = offer?.price ?? (try? product(subscription.autoRenewProductID))?.price {
            payload["renewalPrice"] = price
        }
        return payload
    }

    /// A notification about the subscription `original`: `signedTransactionInfo` is the
    /// transaction `transactionID` (the newest unless named), with the renewal info and the
    /// status as they are now.
    private func emit(
        _ state: inout State, _ original: String, _ type: String, _ subtype: String?, at now: Int64,
        naming transactionID: String? = nil, extra: [String: any Sendable] = [:]
    ) {
        let subscription = state.subscriptions[original]!
        let transaction =
            transactionID.flatMap { id in subscription.transactions.first { $0.id == id } } ?? subscription.latest
        // Signing cannot fail with the chain this store generated; a failure is a broken build.
        guard let signedTransaction = try? sign(transactionPayload(subscription, transaction, signedAt: now)),
            let renewal = try? sign(renewalPayload(subscription, signedAt: now))
        else { preconditionFailure("the simulator's signing chain could not sign") }
        var data = extra
        data["signedTransactionInfo"] = signedTransaction
        data["signedRenewalInfo"] = renewal
        data["status"] = subscription.status
        send(&state, type, subtype, original: original, transactionID: transaction.id, data: data, at: now)
    }

    /// A notification about the one-time purchase `id`: its transaction, no renewal info and
    /// no status (those are for auto-renewable subscriptions).
    private func emitOneTime(
        _ state: inout State, _ id: String, _ type: String, at now: Int64, extra: [String: any Sendable] = [:]
    ) {
        guard let signedTransaction = try? sign(oneTimePayload(state.purchases[id]!, signedAt: now)) else {
            preconditionFailure("the simulator's signing chain could not sign")
        }
        var data = extra
        data["signedTransactionInfo"] = signedTransaction
        send(&state, type, nil, original: id, transactionID: id, data: data, at: now)
    }

    private func send(
        _ state: inout State, _ type: String, _ subtype: String?, original: String, transactionID: String,
        data: [String: any Sendable], at now: Int64, as field: String = "data"
    ) {
        let uuid = UUID().uuidString.lowercased()
        var payload: [String: any Sendable] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": now,
        ]
        if let subtype { payload["subtype"] = subtype }
        var data = data
        data["bundleId"] = configuration.bundleID
        // A summary carries no bundleVersion.
        if field == "data" { data["bundleVersion"] = "1.0" }
        data["environment"] = configuration.environment
        // Apple leaves appAppleId out in the sandbox.
        if configuration.environment == "Production" { data["appAppleId"] = configuration.appAppleID }
        payload[field] = data
        guard let signed = try? sign(payload) else {
            preconditionFailure("the simulator's signing chain could not sign")
        }
        let notification = SentNotification(
            uuid: uuid, type: type, subtype: subtype, originalTransactionID: original, transactionID: transactionID,
            signedDate: now, signedPayload: signed)
        state.outbox.append(notification)
        state.sent.append(notification)
    }

    /// `payload` signed as `chain.sign` signs it, under the header encoded once.
    private func sign(_ payload: [String: any Sendable]) throws(SimError) -> String {
        do {
            let input =
                encodedHeader + "."
                + Base64URL.encode(try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
            let signature = try ECDSASignature.raw(
                fromDER: try chain.leafKey.signSHA256(Array(input.utf8)), coordinateBytes: 32)
            return input + "." + Base64URL.encode(signature)
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

    /// The original id of the subscription `id` belongs to; `.conflict` for a one-time purchase.
    private static func subscription(_ id: String, in state: State) throws(SimError) -> String {
        let original = try original(id, in: state)
        guard state.subscriptions[original] != nil else {
            throw SimError(.conflict, "\(id) is a one-time purchase, not an auto-renewable subscription")
        }
        return original
    }

    private static func index(of transactionID: String, in subscription: Subscription) throws(SimError) -> Int {
        guard let index = subscription.transactions.firstIndex(where: { $0.id == transactionID }) else {
            throw SimError(.notFound, "no transaction \(transactionID)")
        }
        return index
    }

    private static func requireNotRevoked(_ transactionID: String, _ original: String, in state: State)
        throws(SimError)
    {
        let revoked: Bool
        if let purchase = state.purchases[original] {
            revoked = purchase.revocationDate != nil
        } else {
            let subscription = state.subscriptions[original]!
            revoked = subscription.transactions[try index(of: transactionID, in: subscription)].revocationDate != nil
        }
        guard !revoked else { throw SimError(.conflict, "\(transactionID) is already revoked") }
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
