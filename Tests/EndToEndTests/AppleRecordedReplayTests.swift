import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// Real App Store data through the whole system: the 14 notifications Apple signed for one
/// sandbox subscription are delivered to the verifier's HTTP ingress while storesim's recorded
/// App Store Server API answers with the payloads Apple signed up to each notification's
/// signedDate, and the verifier trusts Apple's real root. The access timeline that comes out
/// must not depend on the order the notifications arrive in, and must be the one the verified
/// periods give (`RecordedAppleLifecycle`). In store order, what CheckAccess answered at each
/// notification's signedDate once that notification was processed is what it answers about that
/// instant at the end (`RecordedHistory`).
@Suite(
    "End to end: real App Store notifications replayed in any order",
    .enabled(if: RecordedAppleLifecycle.available, Comment(rawValue: RecordedAppleLifecycle.skipMessage)),
    .serialized)
struct AppleRecordedReplayTests {
    static let policy = """
        capability pro
        \(RecordedAppleLifecycle.products.map { "  apple \($0)" }.joined(separator: "\n"))
        """
    static let shuffles = 20

    @Test(
        "the 14 notifications in store order and in 20 seeded shuffles give one access timeline, the one the verified periods give",
        .timeLimit(.minutes(10)))
    func replayInAnyOrder() async throws {
        let lifecycle = try RecordedAppleLifecycle()
        try #require(lifecycle.notifications.count == 14, "the fixture should hold 14 notifications")
        let seed = SeededGenerator.seed(default: 0x5E55_1042)
        var generator = SeededGenerator(seed: seed)
        // Each order as positions in store order: 0 is the first notification Apple signed.
        var orders = [("store order", Array(lifecycle.notifications.indices))]
        for number in 1...Self.shuffles {
            let order = lifecycle.notifications.indices.shuffled(using: &generator)
            orders.append(("shuffle \(number) of seed \(String(seed, radix: 16)) \(order)", order))
        }
        let points = lifecycle.points
        let expected = points.map { lifecycle.expected(at: $0.at) }

        var timelines: [[RecordedAppleLifecycle.Answer]] = []
        for (name, order) in orders {
            let (timeline, history) = try await Self.replay(
                order.map { lifecycle.notifications[$0] }, of: lifecycle, at: points.map(\.at), name: name,
                askingLive: timelines.isEmpty)
            if let history {
                let changed = history.changed
                #expect(
                    changed.isEmpty,
                    "in store order answers about notification instants changed:\n\(changed.joined(separator: "\n"))")
            }
            if let first = timelines.first {
                let differing = points.indices.filter { timeline[$0] != first[$0] }.map {
                    "  at \(points[$0].at) (\(points[$0].label)): \(timeline[$0]), in store order \(first[$0])"
                }
                if !differing.isEmpty {
                    Issue.record(
                        "\(name) changed \(differing.count) of \(points.count) answers:\n\(differing.joined(separator: "\n"))"
                    )
                }
            }
            timelines.append(timeline)
        }
        let storeOrder = try #require(timelines.first)
        let wrong = points.indices.filter { !expected[$0].accepts(storeOrder[$0]) }.map {
            "  at \(points[$0].at) (\(points[$0].label)): \(storeOrder[$0]), expected \(expected[$0])"
        }
        if !wrong.isEmpty {
            Issue.record(
                "in store order \(wrong.count) of \(points.count) answers are not the verified periods':\n\(wrong.joined(separator: "\n"))"
            )
        }
    }

    /// Delivers `order` to a fresh stack (its own ledger), the recorded API as of each
    /// notification's signedDate while it is processed; returns CheckAccess at each of `instants`
    /// and, with `askingLive`, the answer at each notification's signedDate once it was processed
    /// beside the one at the end.
    static func replay(
        _ order: [RecordedAppleLifecycle.Notification], of lifecycle: RecordedAppleLifecycle, at instants: [Int64],
        name: String, askingLive: Bool = false
    ) async throws -> (timeline: [RecordedAppleLifecycle.Answer], history: RecordedHistory?) {
        let originals = Set(lifecycle.transactions.map(\.original))
        let original = try #require(originals.first, "the fixture names no subscription")
        try #require(originals.count == 1, "the fixture should be one subscription, it names \(originals)")
        let stack = try await StoreSimStack(
            simulator: [
                "STORESIM_APPLE_RECORDED": RecordedAppleLifecycle.file.path,
                "STORESIM_APPLE_RECORDED_ROOTS": RecordedAppleLifecycle.root.path,
                "STORESIM_APPLE_BUNDLE_ID": RecordedAppleLifecycle.bundleID,
                "STORESIM_APPLE_APP_ID": String(RecordedAppleLifecycle.appAppleID),
            ],
            policy: policy, inProcess: true)
        do {
            let ingress = try await stack.verifier.httpPort()
            let account = "replay-\(UUID().uuidString.prefix(8).lowercased())"
            var history = RecordedHistory()
            for (index, notification) in order.enumerated() {
                try await stack.control("apple/recorded/as-of", ["at": notification.signedDate])
                let body = String(
                    decoding: try JSONSerialization.data(withJSONObject: ["signedPayload": notification.jws]),
                    as: UTF8.self)
                let (status, answer) = try await httpPost(
                    port: ingress, path: "/apple/notifications/sandbox", body: body)
                #expect(status == 200, "\(name): the verifier answered \(notification.name) with \(status): \(answer)")
                try await stack.settle()
                if index == 0 {
                    // The data carries no appAccountToken: the app's backend links the subscription.
                    _ = try await stack.entitlementStack.link(
                        SubscriptionKey(store: .apple, environment: .sandbox, storeID: original), account: account,
                        tag: "link-\(account)")
                    try await stack.settle()
                }
                if askingLive {
                    history.append(
                        notification.name, account: account, at: notification.signedDate,
                        try await stack.check(account, at: notification.signedDate))
                }
            }
            try await stack.settle()
            let failed: ListInboxResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/ListInbox", ListInboxRequest(status: .failed, pageSize: 100))
            #expect(
                failed.entries.isEmpty,
                "\(name): notifications failed to process: \(failed.entries.map { "\($0.notificationType) \($0.lastError ?? "")" })"
            )
            let answers = try await stack.checks(account, at: instants).map(RecordedAppleLifecycle.Answer.init)
            try #require(answers.count == instants.count)
            try await history.askAgain(stack)
            await stack.stop()
            return (answers, askingLive ? history : nil)
        } catch {
            await stack.stop()
            throw error
        }
    }
}
