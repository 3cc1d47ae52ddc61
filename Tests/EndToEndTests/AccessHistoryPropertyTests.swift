import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// A property of history, through the whole system and the store simulator: what `CheckAccess`
/// answered about an instant when it was asked then, it answers again when asked about that
/// instant (`at`) afterwards. Many seeded random lifecycles of both stores share one simulator
/// clock: purchases, renewals (Apple charges them up to a day early), cancellations and
/// restarts, failed payments into grace, billing retry and account hold and the recoveries
/// from them, pauses and resumes, plan changes at once and at renewal, renewal-date extensions,
/// refunds and voids of the current or a past period, refund reversals, family sharing and its
/// revocation, re-purchases. Each round draws an action (or none) for every lifecycle and does
/// them at one instant, a second after the last one asked, then moves the clock by a drawn step
/// (an hour to 35 days) in moves of at most two days; every account is asked (after `settle()`)
/// just before the actions and just after them at their instant, and after each move at its
/// instant. At the end every recorded instant is asked again, in batches.
///
/// `allowed`, `reason` and `until` must be what they were, except where a later store fact
/// rewrote that past. A refund or a revocation takes access away from its own time on (docs/entitlement.md,
/// "What a subscription means for access"): an instant before it stays allowed, until it at the
/// latest. The exceptions, each asserted as such by the fact in the lifecycle's own log that
/// explains it:
/// 1. Allowed then, `REVOKED` now: a refund, void or family-sharing revocation done after the
///    answer revoked, at or before the instant, a period that had begun by then (the periods and
///    their revocations as the simulator's transactions and orders hold them at the end). The
///    actions of a round are done at an instant asked just before them, so this is the answer
///    asked at a revocation's own instant, just before it.
/// 2. `REVOKED` then, anything else now: a refund reversal done after the answer.
/// 3. Allowed both times, until later now: an action on the lifecycle done after the answer (a
///    recovery, a resubscription or restart, an extension, a plan change, a resume), or a move
///    of the clock after it to within a day of the old end (a renewal; Apple charges up to a day
///    early).
/// 4. Allowed both times, until sooner now: a refund, void or revocation done after the answer,
///    of a period that began before the old end: access now ends at the revocation, or where the
///    run of periods reaches the revoked period (also one refunded after it ended).
/// 5. Anything else, for an answer asked at an instant before another action done at that same
///    instant (a purchase, a recovery, a resume): the two share a millisecond, whose order within
///    it the system cannot know; the answer asked after the action, at that instant, is held to
///    the rules instead.
/// 6. Allowed both times, until sooner now: a Play plan change at once done after the answer, at
///    the later end: Play cut the old token's paid time there (its `expiryTime` moves to the
///    change) and the new token, a subscription of its own, carries access on from it (an
///    answer's `until` is where the subscription behind it stops, not where the account's
///    access across its subscriptions does).
///
/// Anything else fails, naming the seed (`TEST_SEED` repeats it), the store, the
/// account, the instant, both answers and the lifecycle's log: its actions and the answers
/// recorded where they changed. A line on standard output counts the answers of every kind.
@Suite("End to end: past answers stand through random lifecycles of both stores", .serialized)
struct AccessHistoryPropertyTests {
    static let lifecyclesPerStore = 200
    /// Where the simulator's clock starts: 2024-01-01T00:00:00Z, years before any day the suite
    /// runs on, so that the whole play stays behind the services' own clock. The verifier stamps
    /// a Play read made without a notification (the app's VerifyPurchase) with that clock, and
    /// takes a cancelled Play subscription whose expiry that clock has passed for expired; were
    /// that clock inside the simulated time, such reads would fall among the stores' facts out of
    /// their order.
    static let start: Int64 = 1_704_067_200_000
    static let rounds = 20
    /// The longest move of the clock between two `settle()`s, in seconds: the services hear of
    /// what the stores did within two days of simulated time (in life, within seconds; Play
    /// refunds a purchase nobody acknowledged within three days).
    static let longestMove: Int64 = 2 * 86_400
    /// The chance, in percent, that a lifecycle acts in a round.
    static let actionPercent = 35
    static let day: Int64 = 86_400_000
    static let appleProducts = ["com.example.pro.monthly", "com.example.premium.monthly"]
    static let playProducts = ["pro_sub", "premium_sub"]

    @Test(
        "what CheckAccess answered about an instant it answers later, but where a later store fact rewrote that past",
        .timeLimit(.minutes(10)))
    func pastAnswersStand() async throws {
        let seed = SeededGenerator.seed(default: 0x4157_0129)
        let began = ContinuousClock.now
        // The simulator draws Apple's early charge moments from the seed too.
        try await StoreSimStack.with(
            start: Self.start, simulator: ["STORESIM_APPLE_SEED": String(seed)], inProcess: true
        ) { stack in
            var generator = SeededGenerator(seed: seed)
            var lifecycles = (0..<2 * Self.lifecyclesPerStore).map { number in
                let apple = number < Self.lifecyclesPerStore
                return Lifecycle(
                    number: number, store: apple ? .appStore : .play,
                    account: apple ? String(format: "00000000-0000-4000-8000-%012x", number) : "play-\(number)",
                    familyShared: apple && Int.random(in: 0..<4, using: &generator) == 0,
                    startRound: Int.random(in: 0..<4, using: &generator),
                    product: apple ? Self.appleProducts[0] : Self.playProducts[0])
            }
            for round in 0..<Self.rounds {
                // The actions a second after the instant last asked, so that no fact they make
                // shares a millisecond with the stores' answers to the reads made before (as in
                // life); every account is asked at their instant just before them and after them.
                try await stack.control("clock/advance", ["by": "+1s"])
                let now = try await stack.simNow()
                try await stack.settle()
                try await Self.record(&lifecycles, at: now, stack: stack)
                for index in lifecycles.indices {
                    try await Self.act(&lifecycles[index], round: round, at: now, stack: stack, generator: &generator)
                }
                try await stack.settle()
                try await Self.record(&lifecycles, at: now, stack: stack)
                var left = Self.step(&generator)
                while left > 0 {
                    let move = min(left, Self.longestMove)
                    left -= move
                    try await stack.control("clock/advance", ["by": "+\(move)s"])
                    let moved = try await stack.simNow()
                    for index in lifecycles.indices { lifecycles[index].log.append(.clock(to: moved)) }
                    try await stack.settle()
                    try await Self.record(&lifecycles, at: moved, stack: stack)
                }
            }
            let played = ContinuousClock.now - began
            try await Self.askAgain(lifecycles, seed: seed, stack: stack, played: played, began: began)
        }
    }

    /// Every recorded instant asked again, each answer compared with the one recorded and every
    /// difference explained (the suite's exceptions) or reported.
    static func askAgain(
        _ lifecycles: [Lifecycle], seed: UInt64, stack: StoreSimStack, played: Duration, began: ContinuousClock.Instant
    ) async throws {
        var asked: [(lifecycle: Int, entry: Int, at: Int64, live: CheckAccessResponse)] = []
        for (number, lifecycle) in lifecycles.enumerated() {
            for (index, entry) in lifecycle.log.enumerated() {
                if case .answer(let at, let answer) = entry { asked.append((number, index, at, answer)) }
            }
        }
        let later = try await EntitlementStack.answers(
            stack.entitlementClient,
            asked.map {
                CheckAccessRequest(
                    accountID: lifecycles[$0.lifecycle].account, capability: "pro", atMilliseconds: $0.at)
            })
        try #require(later.count == asked.count)
        var counts: [String: Int] = [:]
        var unexplained: [String: (count: Int, first: String)] = [:]
        var periods: [Int: [PaidPeriod]] = [:]
        for (number, question) in asked.enumerated() {
            let answer = later[number]
            let lifecycle = lifecycles[question.lifecycle]
            if Self.same(question.live, answer) {
                counts["unchanged", default: 0] += 1
                continue
            }
            // The store's record is read only where an explanation needs it.
            let liveEnd = question.live.accessEnd
            if question.live.allowed
                && (answer.reason == .revoked || (answer.allowed && answer.accessEnd < liveEnd)),
                periods[question.lifecycle] == nil
            {
                periods[question.lifecycle] = try await Self.paidPeriods(of: lifecycle, stack: stack)
            }
            let paid = periods[question.lifecycle] ?? []
            if let change = lifecycle.change(after: question.entry, at: question.at, question.live, answer, paid) {
                counts[change.rawValue, default: 0] += 1
                continue
            }
            // The full report (the lifecycle's whole log) for the first of each kind only.
            let report = {
                Self.report(seed: seed, lifecycle, entry: question.entry, live: question.live, later: answer)
            }
            let kind =
                "\(lifecycle.store.rawValue): \(Self.kind(question.live)) → \(Self.kind(answer, than: question.live))"
            if unexplained[kind] == nil { unexplained[kind] = (0, report()) }
            unexplained[kind]!.count += 1
        }
        // The first change of each kind in full, then how many of each kind there were.
        for (_, found) in unexplained { Issue.record(Comment(rawValue: found.first)) }
        if !unexplained.isEmpty {
            let list = unexplained.sorted { $0.value.count > $1.value.count }.map { "  \($0.value.count) \($0.key)" }
            Issue.record(
                "seed \(String(seed, radix: 16)): answers changed unexplained:\n\(list.joined(separator: "\n"))")
        }
        let tally = counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
        print(
            "access history: seed \(String(seed, radix: 16)), \(lifecyclesPerStore) App Store and \(lifecyclesPerStore) "
                + "Play lifecycles, \(rounds) rounds, \(asked.count) answers asked again: "
                + tally.joined(separator: ", ")
                + ", \(unexplained.values.reduce(0) { $0 + $1.count }) unexplained; played in \(played), "
                + "all in \(ContinuousClock.now - began)")
    }

    /// Whether two answers say the same: allowed, reason and until.
    static func same(_ one: CheckAccessResponse, _ other: CheckAccessResponse) -> Bool {
        one.allowed == other.allowed && one.reason == other.reason && one.untilMilliseconds == other.untilMilliseconds
    }

    /// CheckAccess for every lifecycle's account at `instant`, recorded in its log.
    static func record(_ lifecycles: inout [Lifecycle], at instant: Int64, stack: StoreSimStack) async throws {
        let answers = try await EntitlementStack.answers(
            stack.entitlementClient, accounts: lifecycles.map(\.account), at: instant)
        try #require(answers.count == lifecycles.count)
        for index in lifecycles.indices {
            lifecycles[index].log.append(.answer(at: instant, answers[index]))
            lifecycles[index].latest = answers[index]
        }
    }

    /// How far the clock moves after a round, in seconds: an hour to two days (three rounds in
    /// ten), or two to 35 days.
    static func step(_ generator: inout SeededGenerator) -> Int64 {
        Int.random(in: 0..<10, using: &generator) < 3
            ? Int64.random(in: 3_600...172_800, using: &generator)
            : Int64.random(in: 172_800...3_024_000, using: &generator)
    }

    // MARK: Actions

    /// In its first round the lifecycle's purchase; later, now and then (`actionPercent`), an
    /// action drawn from those that fit the state it was last answered in, done at `now`.
    static func act(
        _ lifecycle: inout Lifecycle, round: Int, at now: Int64, stack: StoreSimStack,
        generator: inout SeededGenerator
    ) async throws {
        if round == lifecycle.startRound {
            switch lifecycle.store {
            case .appStore:
                let (original, _) = try await stack.buyOnAppStore(
                    account: lifecycle.account, familyShared: lifecycle.familyShared, apart: false)
                lifecycle.ids.append(original)
                lifecycle.note(
                    at: now, "buy \(lifecycle.product)\(lifecycle.familyShared ? ", family shared" : ""): \(original)")
            case .play:
                try await buyOnPlay(&lifecycle, product: lifecycle.product, at: now, stack: stack)
            }
            return
        }
        guard round > lifecycle.startRound, Int.random(in: 0..<100, using: &generator) < actionPercent else { return }
        switch lifecycle.store {
        case .appStore: try await actOnAppStore(&lifecycle, at: now, stack: stack, generator: &generator)
        case .play: try await actOnPlay(&lifecycle, at: now, stack: stack, generator: &generator)
        }
    }

    static func actOnAppStore(
        _ lifecycle: inout Lifecycle, at now: Int64, stack: StoreSimStack, generator: inout SeededGenerator
    ) async throws {
        let original = lifecycle.ids[0]
        let family = lifecycle.familyShared ? 1 : 0
        let menu: [(String, Int)]
        switch lifecycle.latest?.grant?.state {
        case .active?:
            menu = [
                ("cancel", 3), ("fail-payment", 3), ("change-product", 2), ("extend-renewal", 1 - family),
                ("refund", 2), ("decline-refund", 1), ("revoke-family-sharing", 2 * family), ("recover", 1),
            ]
        case .cancelled?: menu = [("resubscribe", 4), ("change-product", 1), ("fail-payment", 1), ("refund", 1)]
        case .gracePeriod?, .billingRetry?:
            menu = [("recover", 5), ("cancel", 1), ("refund", 1), ("revoke-family-sharing", family)]
        case .revoked?: menu = [("reverse-refund", 4), ("refund", 1)]
        default: menu = [("reverse-refund", 1), ("refund", 1)]
        }
        guard let action = pick(menu, &generator) else { return }
        var body: [String: Any] = ["transactionId": original]
        var text = action
        var effect = Lifecycle.Effect.other
        switch action {
        case "change-product":
            let product = appleProducts.first { $0 != lifecycle.product } ?? appleProducts[0]
            body["productId"] = product
            text += " to \(product)"
        case "extend-renewal":
            let days = Int.random(in: 1...20, using: &generator)
            body["days"] = days
            text += " by \(days) days"
        case "refund":
            let transactions = try await appleTransactions(of: original, stack: stack)
            guard let target = transactions.filter({ $0.revoked == nil }).randomElement(using: &generator) else {
                return
            }
            body["transactionId"] = target.id
            text += " of \(target.id)\(target.id == transactions.last?.id ? " (the newest)" : "")"
            effect = .revocation
        case "reverse-refund":
            guard let target = lifecycle.refunded.randomElement(using: &generator) else { return }
            body["transactionId"] = target
            text += " of \(target)"
            effect = .reversal
        case "revoke-family-sharing": effect = .revocation
        default: break
        }
        let done = try await stack.attempt("apple/\(action)", body, apart: false) != nil
        lifecycle.note(at: now, text, effect: done ? effect : nil)
        guard done, let target = body["transactionId"] as? String else { return }
        switch action {
        case "change-product": lifecycle.product = body["productId"] as? String ?? lifecycle.product
        case "refund": lifecycle.refunded.append(target)
        case "reverse-refund": lifecycle.refunded.removeAll { $0 == target }
        default: break
        }
    }

    static func actOnPlay(
        _ lifecycle: inout Lifecycle, at now: Int64, stack: StoreSimStack, generator: inout SeededGenerator
    ) async throws {
        guard let token = lifecycle.ids.last else { return }
        // The verifier reads a cancelled Play subscription whose expiry is past its own clock as
        // expired, and the simulator's clock may be behind it: the test knows what it cancelled.
        let cancelled = lifecycle.cancelled && lifecycle.latest?.allowed == true
        let menu: [(String, Int)]
        switch cancelled ? .cancelled : lifecycle.latest?.grant?.state {
        case .active?:
            menu = [
                ("cancel", 3), ("fail-payment", 3), ("pause", 2), ("change-product", 2), ("defer-change", 1),
                ("refund", 1), ("void", 2), ("recover", 1),
            ]
        case .cancelled?: menu = [("restart", 4), ("refund", 1), ("void", 1)]
        case .gracePeriod?, .accountHold?: menu = [("recover", 5), ("refund", 1), ("void", 1)]
        case .paused?: menu = [("resume", 4), ("void", 1)]
        default: menu = [("buy", 2), ("void", 1)]
        }
        guard let action = pick(menu, &generator) else { return }
        var path = action
        var body: [String: Any] = ["purchaseToken": token]
        var text = "\(action) \(token.prefix(10))…"
        var effect = Lifecycle.Effect.other
        let otherProduct = playProducts.first { $0 != lifecycle.product } ?? playProducts[0]
        switch action {
        case "buy":
            let product = playProducts.randomElement(using: &generator) ?? playProducts[0]
            return try await buyOnPlay(&lifecycle, product: product, at: now, stack: stack)
        case "pause":
            let days = Int.random(in: 7...30, using: &generator)
            body["for"] = "+\(days)d"
            text += " for \(days) days"
        case "change-product", "defer-change":
            path = "change-product"
            body["productId"] = otherProduct
            body["mode"] = action == "change-product" ? "immediate" : "deferred"
            text += " to \(otherProduct)"
        case "refund": effect = .revocation
        case "void":
            let voided = lifecycle.ids.randomElement(using: &generator) ?? token
            let orders = try await playOrders(of: voided, stack: stack)
            guard let order = orders.filter({ $0.revoked == nil }).randomElement(using: &generator) else { return }
            body = ["orderId": order.id, "revoke": true]
            text = "void \(order.id) of \(voided.prefix(10))…\(order.id == orders.last?.id ? " (its newest)" : "")"
            effect = .revocation
        default: break
        }
        let answer = try await stack.attempt("google/\(path)", body, apart: false)
        lifecycle.note(at: now, text, effect: answer == nil ? nil : effect)
        if answer != nil, ["cancel", "restart"].contains(action) { lifecycle.cancelled = action == "cancel" }
        guard path == "change-product", let next = answer?["purchaseToken"] as? String else { return }
        // The app tells the verifier of the new purchase, as after any purchase flow.
        _ = try await stack.verifyOnPlay(next, product: otherProduct, account: lifecycle.account)
        lifecycle.ids.append(next)
        lifecycle.product = otherProduct
        lifecycle.cancelled = false
        if action == "change-product" {
            lifecycle.immediateChanges.append(now)
        } else {
            lifecycle.deferredChanges.append(now)
        }
        lifecycle.note(at: now, "  the new token \(next.prefix(10))…")
    }

    /// A Play purchase of `product` for the lifecycle's account, verified by the app.
    static func buyOnPlay(_ lifecycle: inout Lifecycle, product: String, at now: Int64, stack: StoreSimStack)
        async throws
    {
        let (token, _) = try await stack.buyOnPlay(account: lifecycle.account, product: product, apart: false)
        lifecycle.ids.append(token)
        lifecycle.product = product
        lifecycle.cancelled = false
        lifecycle.note(at: now, "buy \(product): \(token.prefix(10))…")
    }

    /// One of `menu`'s names, drawn by their weights; nil when every weight is 0.
    static func pick(_ menu: [(String, Int)], _ generator: inout SeededGenerator) -> String? {
        let total = menu.reduce(0) { $0 + $1.1 }
        guard total > 0 else { return nil }
        var draw = Int.random(in: 0..<total, using: &generator)
        for (name, weight) in menu {
            if draw < weight { return name }
            draw -= weight
        }
        return nil
    }

    // MARK: The stores' record

    /// A period the store was paid for, as the simulator holds it: a transaction or an order,
    /// where it starts and when it was revoked.
    struct PaidPeriod {
        var id: String
        var start: Int64
        var revoked: Int64?
    }

    /// Every period of the lifecycle's purchases as the simulator holds them now.
    static func paidPeriods(of lifecycle: Lifecycle, stack: StoreSimStack) async throws -> [PaidPeriod] {
        var periods: [PaidPeriod] = []
        for id in lifecycle.ids {
            switch lifecycle.store {
            case .appStore: periods += try await appleTransactions(of: id, stack: stack)
            case .play: periods += try await playOrders(of: id, stack: stack)
            }
        }
        return periods
    }

    /// The transactions of the subscription `original`, oldest first.
    static func appleTransactions(of original: String, stack: StoreSimStack) async throws -> [PaidPeriod] {
        try await listed(
            "apple/transactions", ["transactionId": original], in: "transactions",
            fields: ("transactionId", "purchaseDate", "revocationDate"), stack: stack)
    }

    /// The orders of the Play token `token`, oldest first.
    static func playOrders(of token: String, stack: StoreSimStack) async throws -> [PaidPeriod] {
        try await listed(
            "google/orders", ["purchaseToken": token], in: "orders", fields: ("orderId", "start", "voidedAt"),
            stack: stack)
    }

    /// The periods the simulator's control call `path` lists in the array `list`, each read from
    /// its id, start and revocation `fields`.
    static func listed(
        _ path: String, _ body: [String: Any], in list: String, fields: (id: String, start: String, revoked: String),
        stack: StoreSimStack
    ) async throws -> [PaidPeriod] {
        let answer = try await stack.control(path, body)
        return (answer[list] as? [[String: Any]] ?? []).map { entry in
            PaidPeriod(
                id: entry[fields.id] as? String ?? "", start: milliseconds(entry[fields.start]) ?? 0,
                revoked: milliseconds(entry[fields.revoked]))
        }
    }

    static func milliseconds(_ value: Any?) -> Int64? { (value as? NSNumber)?.int64Value }

    // MARK: Reporting

    /// A change no exception explains: the seed, the lifecycle, both answers and its log (its
    /// actions and the answers recorded where they changed; the one in question marked).
    static func report(
        seed: UInt64, _ lifecycle: Lifecycle, entry questioned: Int, live: CheckAccessResponse,
        later: CheckAccessResponse
    ) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let time = { (milliseconds: Int64) in
            formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }
        let text = { (answer: CheckAccessResponse) in answer.described(time: time) }
        guard case .answer(let instant, _) = lifecycle.log[questioned] else { return "" }
        var lines = [
            "seed \(String(seed, radix: 16)), \(lifecycle.store.rawValue) lifecycle \(lifecycle.number) "
                + "(account \(lifecycle.account)): at \(time(instant)) CheckAccess answered \(text(live)), "
                + "asked later \(text(later)); nothing in its log explains the change. Its log (answers where "
                + "they changed):"
        ]
        var shown: String?
        for (index, entry) in lifecycle.log.enumerated() {
            switch entry {
            case .action(let at, let what, let effect):
                lines.append("  \(time(at)) \(what)\(effect == nil ? " (refused)" : "")")
            case .clock: break
            case .answer(let at, let answer):
                let said = text(answer)
                if index == questioned {
                    lines.append("    at \(time(at)): \(said)   <- asked later: \(text(later))")
                } else if said != shown {
                    lines.append("    at \(time(at)): \(said)")
                }
                shown = said
            }
        }
        return lines.joined(separator: "\n")
    }

    /// An answer's kind, to group changes: allowed (with `until` against `earlier`'s), or the
    /// reason for a denial.
    static func kind(_ answer: CheckAccessResponse, than earlier: CheckAccessResponse? = nil) -> String {
        guard answer.allowed else { return "denied \(answer.reason.map { "\($0)" } ?? "-")" }
        guard let earlier, earlier.allowed else { return "allowed" }
        let (end, other) = (answer.accessEnd, earlier.accessEnd)
        return end == other ? "allowed, same until" : end > other ? "allowed longer" : "allowed shorter"
    }
}

extension AccessHistoryPropertyTests {
    /// One customer in one store: the purchases made, what was done to them, how the clock moved
    /// and every answer recorded, in the order it happened.
    struct Lifecycle {
        enum Store: String {
            case appStore = "App Store"
            case play = "Google Play"
        }

        /// What an action can do to the past.
        enum Effect {
            /// A refund, a void or a revocation: the period it revokes reads `REVOKED` from then on.
            case revocation
            /// A refund taken back.
            case reversal
            case other
        }

        enum Entry {
            /// An action done at `at`; `effect` nil when the simulator refused it (nothing happened).
            case action(at: Int64, text: String, effect: Effect?)
            case clock(to: Int64)
            case answer(at: Int64, CheckAccessResponse)
        }

        /// Why an answer changed, one of the suite's exceptions.
        enum Change: String {
            case revoked = "revoked at their instant by a later refund or revocation"
            case reversed = "changed by a later refund reversal"
            case extended = "allowed longer after a later fact"
            case shortenedAtRevocation = "allowed until a later revocation"
            case shortenedAtRevokedPeriod = "allowed until a period revoked later (after it ended, maybe)"
            case superseded = "superseded by another action at their instant"
            case cutAtPlayChange = "allowed until a later Play plan change at once (the old token cut there)"
        }

        let number: Int
        let store: Store
        let account: String
        let familyShared: Bool
        /// The round it makes its purchase in.
        let startRound: Int
        /// The product it has or moves to.
        var product: String
        /// App Store: the original transaction id. Play: every token, oldest first (plan changes,
        /// new purchases).
        var ids: [String] = []
        /// Play: when each plan change at once was made, and each deferred one.
        var immediateChanges: [Int64] = []
        var deferredChanges: [Int64] = []
        /// Play: whether the newest token's renewal was turned off (and not back on).
        var cancelled = false
        /// App Store transactions refunded and not reversed.
        var refunded: [String] = []
        var log: [Entry] = []
        /// The answer recorded last.
        var latest: CheckAccessResponse?

        init(number: Int, store: Store, account: String, familyShared: Bool, startRound: Int, product: String) {
            self.number = number
            self.store = store
            self.account = account
            self.familyShared = familyShared
            self.startRound = startRound
            self.product = product
        }

        mutating func note(at: Int64, _ text: String, effect: Effect? = .other) {
            log.append(.action(at: at, text: text, effect: effect))
        }

        /// Which exception explains that the answer about `instant` recorded at log entry `entry`,
        /// `live`, now reads `later`; nil when none does. `paid` is the store's record of the
        /// lifecycle's periods (needed only where `live` allowed and `later` is shorter or
        /// `REVOKED`).
        func change(
            after entry: Int, at instant: Int64, _ live: CheckAccessResponse, _ later: CheckAccessResponse,
            _ paid: [PaidPeriod]
        ) -> Change? {
            let done = actions(after: entry)
            let revocations = Set(done.filter { $0.effect == .revocation }.map(\.at))
            // The periods a revocation done after the answer revoked.
            let revoked = paid.filter { $0.revoked.map(revocations.contains) == true }
            if live.allowed && later.reason == .revoked {
                // Revoked at or before the instant (here: at it, done after the answer), in a
                // period that had begun (Play's last one runs on through grace).
                let revokedThen = revoked.contains { $0.start <= instant && $0.revoked! <= instant }
                return revokedThen ? .revoked : nil
            }
            if done.contains(where: { $0.at == instant }) { return .superseded }
            if live.allowed && later.allowed {
                let (liveEnd, laterEnd) = (live.accessEnd, later.accessEnd)
                if laterEnd > liveEnd {
                    let renewal = log[(entry + 1)...].contains { entry in
                        if case .clock(let to) = entry { return to >= liveEnd - AccessHistoryPropertyTests.day }
                        return false
                    }
                    return !done.isEmpty || renewal ? .extended : nil
                }
                // Play cut the old token's paid time at a plan change at once (its expiryTime moves
                // there); the new token carries access on, a subscription of its own.
                if store == .play, immediateChanges.contains(laterEnd), done.contains(where: { $0.at == laterEnd }) {
                    return .cutAtPlayChange
                }
                // A run of periods stops at a revoked one, at the revocation or the period's end.
                if revocations.contains(laterEnd) { return .shortenedAtRevocation }
                return revoked.contains { $0.start < liveEnd } ? .shortenedAtRevokedPeriod : nil
            }
            if live.reason == .revoked {
                return done.contains { $0.effect == .reversal } ? .reversed : nil
            }
            return nil
        }

        /// The actions done (not refused) after log entry `entry`, in order.
        func actions(after entry: Int) -> [(at: Int64, effect: Effect)] {
            log[(entry + 1)...].compactMap { entry in
                if case .action(let at, _, let effect?) = entry { return (at, effect) }
                return nil
            }
        }
    }
}
