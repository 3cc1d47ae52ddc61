import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// Real Play data through the whole system: the 60 real Real-time Developer Notifications
/// (18 purchase tokens, plan changes among them) are pushed through the verifier's Pub/Sub push
/// ingress while storesim's recorded Play Developer API answers each token's subscriptionsv2
/// read with the answer recorded after the notification of that token pushed last. Each order
/// is a run of its own on one system (its tokens prefixed apart); the access timeline of every
/// token, asked at every notification's time and at every period boundary, must not depend on
/// the order the notifications arrive in. In Play's order (each token linked to its account once
/// its first notification is processed), what CheckAccess answered at each notification's event
/// time once that notification was processed is what it answers about that instant once every
/// notification is in (`RecordedHistory`).
@Suite(
    "End to end: real Play notifications replayed in any order",
    .enabled(if: RecordedPlayData.available, Comment(rawValue: RecordedPlayData.skipMessage)), .serialized)
struct GoogleRecordedReplayTests {
    static let file = RecordedPlayData.file
    static let package = "network.loki.messenger"
    static let policy = "capability pro\n  google session_pro\n"
    static let shuffles = 20

    /// One recorded notification: its index, token, event time and type.
    struct Pushed {
        var index: Int
        var token: String
        var eventTime: Int64
        var type: Int
    }

    static func notifications() throws -> [Pushed] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        let scenarios = try #require(root["scenarios"] as? [[String: Any]])
        return try scenarios.enumerated().map { index, scenario in
            let rtdn = try #require(scenario["rtdn_event"] as? [String: Any])
            let notification = try #require(rtdn["subscriptionNotification"] as? [String: Any])
            return Pushed(
                index: index, token: try #require(notification["purchaseToken"] as? String),
                eventTime: Int64(rtdn["eventTimeMillis"] as? String ?? "") ?? 0,
                type: try #require(notification["notificationType"] as? Int))
        }
    }

    @Test(
        "the 60 notifications in Play's order and in 20 seeded shuffles give every token one access timeline",
        .timeLimit(.minutes(10)))
    func replayInAnyOrder() async throws {
        let notifications = try Self.notifications()
        try #require(notifications.count == 60, "the fixture should hold 60 notifications")
        let tokens = Array(Set(notifications.map(\.token))).sorted()
        let seed = SeededGenerator.seed(default: 0x600_6C1E)
        var generator = SeededGenerator(seed: seed)
        var orders = [("Play's order", Array(notifications.indices))]
        for number in 1...Self.shuffles {
            orders.append(
                (
                    "shuffle \(number) of seed \(String(seed, radix: 16))",
                    notifications.indices.shuffled(using: &generator)
                ))
        }
        let stack = try await StoreSimStack(
            simulator: ["STORESIM_GOOGLE_RECORDED": Self.file.path, "STORESIM_GOOGLE_PACKAGE": Self.package],
            policy: Self.policy, inProcess: true)
        do {
            for (run, (name, order)) in orders.enumerated() {
                var history = RecordedHistory()
                var linked: Set<String> = []
                for position in order {
                    let pushed = notifications[position]
                    let answer = try await stack.control(
                        "google/recorded/push", ["index": pushed.index, "run": "r\(run)-"])
                    let statuses = (answer["notifications"] as? [[String: Any]] ?? []).compactMap {
                        $0["status"] as? Int
                    }
                    #expect(statuses == [204], "\(name): push \(position) was answered \(statuses)")
                    // Each read happens while its notification is the latest: the next push waits.
                    try await stack.settle()
                    guard run == 0 else { continue }
                    // In Play's order each token's account is linked at its first notification,
                    // and what it is answered at the notification's time is recorded.
                    if linked.insert(pushed.token).inserted {
                        try await Self.link(pushed.token, run: run, tokens: tokens, stack: stack)
                        try await stack.settle()
                    }
                    let account = "r\(run)-\(pushed.token.prefix(12))"
                    history.append(
                        "notification \(pushed.index)", account: account, at: pushed.eventTime,
                        try await stack.check(account, at: pushed.eventTime))
                }
                for token in tokens where !linked.contains(token) {
                    try await Self.link(token, run: run, tokens: tokens, stack: stack)
                }
                if run == 0 {
                    try await stack.settle()
                    try await history.askAgain(stack)
                    let changed = history.changed
                    #expect(
                        changed.isEmpty,
                        "in Play's order answers about notification times changed:\n\(changed.joined(separator: "\n"))")
                }
            }
            try await stack.settle()
            let failed: ListInboxResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .failed, pageSize: 100))
            #expect(
                failed.entries.isEmpty,
                "failed: \(failed.entries.map { "\($0.notificationType) \($0.lastError ?? "")" })")

            // Where to ask: every notification's time, and every period boundary in Play's order
            // (and a millisecond either side), for every token.
            var instants = Set(notifications.map(\.eventTime))
            for token in tokens {
                let state: GetSubscriptionResponse = try await stack.entitlementStack.ledgerClient.call(
                    "\(EntitlementStack.ledgerService)/GetSubscription",
                    GetSubscriptionRequest(key: Self.key("r0-" + token)))
                for period in state.subscription?.periods ?? [] {
                    for edge in [period.startMilliseconds, period.endMilliseconds, period.revokedTimeMilliseconds] {
                        guard let edge else { continue }
                        instants.formUnion([edge - 1, edge, edge + 1])
                    }
                }
            }
            let points = instants.sorted()
            var first: [String: [String]]?
            for (run, (name, _)) in orders.enumerated() {
                var timelines: [String: [String]] = [:]
                for token in tokens {
                    timelines[token] = try await Self.timeline(
                        stack, account: "r\(run)-\(token.prefix(12))", at: points)
                }
                if let first {
                    let differing = tokens.filter { timelines[$0] != first[$0] }.map { token -> String in
                        let at = points.indices.first { timelines[token]![$0] != first[token]![$0] }!
                        return
                            "\(token.prefix(12)) at \(points[at]): \(timelines[token]![at]), in Play's order \(first[token]![at])"
                    }
                    #expect(differing.isEmpty, "\(name) changed timelines: \(differing)")
                } else {
                    first = timelines
                    // Some access was granted, some refused: the timelines say something.
                    let answers = timelines.values.flatMap { $0 }
                    #expect(answers.contains { $0.hasPrefix("allowed") } && answers.contains { $0.hasPrefix("denied") })
                }
                try await Self.expectPassedStates(stack, run: run, name: name, notifications)
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// The states that passed, asked about after they did, in every order: a day of a grace
    /// period that ended in a renewal or a recovery reads allowed; a day of an account hold that
    /// ended in a recovery reads denied by the state (the recovered order starts at the recovery).
    static func expectPassedStates(
        _ stack: StoreSimStack, run: Int, name: String, _ notifications: [Pushed]
    ) async throws {
        var checked = (grace: 0, hold: 0)
        for token in Set(notifications.map(\.token)).sorted() {
            let pushed = notifications.filter { $0.token == token }.sorted { $0.eventTime < $1.eventTime }
            for (state, next) in zip(pushed, pushed.dropFirst()) {
                let recovered = next.type == 1 || next.type == 2
                guard (state.type == 6 && next.type == 2) || (state.type == 5 && recovered) else { continue }
                let at = (state.eventTime + next.eventTime) / 2
                let answer = try await stack.check("r\(run)-\(token.prefix(12))", at: at)
                if state.type == 6 {
                    #expect(answer.allowed, "\(name): \(token.prefix(12)) in grace at \(at): \(answer)")
                    checked.grace += 1
                } else {
                    #expect(
                        !answer.allowed && answer.reason == .stateDenies,
                        "\(name): \(token.prefix(12)) on hold at \(at): \(answer)")
                    checked.hold += 1
                }
            }
        }
        // The fixture holds two graces that ended in a renewal and two holds that ended in a recovery.
        #expect(checked.grace == 2 && checked.hold == 2, "\(checked)")
    }

    /// Links run `run`'s copy of `token` to an account of its own (`r<run>-` and the token's first
    /// 12 characters).
    static func link(_ token: String, run: Int, tokens: [String], stack: StoreSimStack) async throws {
        _ = try await stack.entitlementStack.link(
            Self.key("r\(run)-" + token), account: "r\(run)-\(token.prefix(12))",
            tag: "link-r\(run)-\(tokens.firstIndex(of: token) ?? 0)")
    }

    static func key(_ token: String) -> SubscriptionKey {
        // Every recorded purchase is a test purchase (`testPurchase`): the sandbox environment.
        SubscriptionKey(store: .google, environment: .sandbox, storeID: token)
    }

    /// CheckAccess for `account` at each instant, as text: allowed with its end, or denied.
    /// (Why not, once the paid time is over, follows the state read last, which a replay in
    /// another order leaves another: on hold, expired.)
    static func timeline(_ stack: StoreSimStack, account: String, at points: [Int64]) async throws -> [String] {
        try await stack.checks(account, at: points).map {
            $0.allowed ? "allowed until \($0.untilMilliseconds.map(String.init) ?? "-")" : "denied"
        }
    }
}

/// Where the real Play pairs are: `../shared/fixtures/google` beside the checkout.
enum RecordedPlayData {
    static let file: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(
            "shared/fixtures/google/subscriptionsv2/rtdn-and-state-60-scenarios.json")
    static var available: Bool { FileManager.default.fileExists(atPath: file.path) }
    static let skipMessage = "../shared/fixtures/google is absent: real Play data not replayed"
}
