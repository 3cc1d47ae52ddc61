import Foundation
import Synchronization
import Testing

@testable import StoreSimKit

/// What a move of the simulator's clock does at scale: everything due happens once, in the order
/// of its moment and, at one moment, of its subscription's id (the App Store's original
/// transaction id, Play's purchase token), whatever was written in between.
@Suite("Store simulator: clock moves")
struct SimClockMoveTests {
    static let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    static let day: Int64 = 86_400_000

    static func apple(lead: Int64) -> AppleSimStore {
        AppleSimStore(
            configuration: AppleSimConfiguration(
                bundleID: "com.example.app", appAppleID: 1_234_567_890,
                products: [AppleSimProduct(id: "com.example.pro.monthly", group: "pro", period: .months(1), level: 2)],
                renewalLeadMilliseconds: lead),
            clock: SimClock(startMilliseconds: start), chain: AppleSimStoreTests.chain)
    }

    static func google() -> GoogleSimStore {
        var configuration = GoogleSimConfiguration(
            packageName: "com.example.app",
            products: [GoogleSimProduct(id: "pro_sub", basePlanID: "monthly", period: .months(1))])
        // Nobody acknowledges here: the deadline stays past the months moved through.
        configuration.acknowledgementWindowMilliseconds = 400 * day
        return GoogleSimStore(configuration: configuration, clock: SimClock(startMilliseconds: start))
    }

    /// Each message's notification type and token.
    static func rtdn(_ messages: [GoogleSimStore.Message]) throws -> [(Int, String)] {
        try messages.map { message in
            let object = try #require(try JSONSerialization.jsonObject(with: message.notification) as? [String: Any])
            let notification = try #require(object["subscriptionNotification"] as? [String: Any])
            return (
                try #require(notification["notificationType"] as? Int),
                try #require(notification["purchaseToken"] as? String)
            )
        }
    }

    @Test(
        "App Store: at one moment, subscriptions step by original transaction id, a failed charge and its period end together"
    )
    func appleEqualMoments() throws {
        // No renewal lead: every renewal is charged at its period's end, the same moment for all.
        let store = Self.apple(lead: 0)
        let ids = try (0..<40).map { _ in try store.buy(productID: "com.example.pro.monthly") }
        // Written in an order of their own after the purchases: cancels and failing charges.
        for id in ids.reversed() where ids.firstIndex(of: id)! % 5 == 3 { try store.cancel(id) }
        for id in ids where ids.firstIndex(of: id)! % 7 == 2 { try store.failPayment(id) }
        _ = store.takeOutbox()
        store.advance(by: 31 * Self.day)

        var expected: [String] = []
        for (index, id) in ids.enumerated().sorted(by: { $0.element < $1.element }) {
            if index % 5 == 3 {
                expected.append("\(id) EXPIRED/VOLUNTARY")
            } else if index % 7 == 2 {
                expected.append("\(id) DID_FAIL_TO_RENEW/GRACE_PERIOD")
            } else {
                expected.append("\(id) DID_RENEW")
            }
        }
        let sent = store.takeOutbox()
        #expect(sent.map { "\($0.originalTransactionID) \($0.type)\($0.subtype.map { "/\($0)" } ?? "")" } == expected)
        #expect(Set(sent.map(\.signedDate)) == [Self.start + 31 * Self.day])
    }

    @Test("App Store: a two-month move over 600 subscriptions renews each exactly twice, in time then id order")
    func appleManyOnce() throws {
        let store = Self.apple(lead: 86_400_000)
        let ids = try Self.bought(600) {
            try store.buy(productID: "com.example.pro.monthly")
        } moving: {
            store.advance(by: $0)
        }
        _ = store.takeOutbox()
        store.advance(by: 62 * Self.day)
        let sent = store.takeOutbox()
        #expect(sent.allSatisfy { $0.type == "DID_RENEW" })
        Self.expectEachTwice(ids, sent.map { ($0.signedDate, $0.originalTransactionID) })
        // Each renewal was stepped once: the queue holds one entry per subscription again.
        #expect(store.state.withLock { $0.due.count } == ids.count)
    }

    /// `count` purchases by `buy`, a hundred a minute (`move` moves the clock).
    static func bought(_ count: Int, _ buy: () throws -> String, moving move: (Int64) -> Void) rethrows -> [String] {
        var ids: [String] = []
        while ids.count < count {
            ids += try (0..<100).map { _ in try buy() }
            move(60_000)
        }
        return ids
    }

    /// Each of `ids` stepped exactly twice in `steps` (moment, id), and the steps in the order of
    /// their moments and, at one moment, of their ids.
    static func expectEachTwice(_ ids: [String], _ steps: [(Int64, String)]) {
        #expect(
            Dictionary(grouping: steps.map(\.1), by: { $0 }).mapValues(\.count)
                == Dictionary(uniqueKeysWithValues: ids.map { ($0, 2) }))
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("Play: at one moment, tokens step by token, whatever order they were written in")
    func googleEqualMoments() throws {
        let store = Self.google()
        let tokens = try (0..<40).map { _ in try store.buy(productID: "pro_sub") }
        for token in tokens.reversed() where tokens.firstIndex(of: token)! % 4 == 1 { try store.cancel(token) }
        _ = store.takeOutbox()
        store.advance(by: 31 * Self.day)

        let expected = tokens.enumerated().sorted(by: { $0.element < $1.element }).map { index, token in
            (index % 4 == 1 ? 13 : 2, token)
        }
        let sent = try Self.rtdn(store.takeOutbox())
        #expect(sent.map(\.0) == expected.map(\.0))
        #expect(sent.map(\.1) == expected.map(\.1))
    }

    @Test("Play: a two-month move over 3,000 purchases renews each exactly twice, in time then token order")
    func googleManyOnce() throws {
        let store = Self.google()
        let tokens = try Self.bought(3000) {
            try store.buy(productID: "pro_sub")
        } moving: {
            store.advance(by: $0)
        }
        _ = store.takeOutbox()
        store.advance(by: 62 * Self.day)
        let messages = store.takeOutbox()
        let sent = try Self.rtdn(messages)
        #expect(sent.allSatisfy { $0.0 == 2 })
        Self.expectEachTwice(tokens, zip(messages, sent).map { ($0.eventTime, $1.1) })
        #expect(store.state.withLock { $0.due.count } == tokens.count)
    }

    @Test("the due queue gives the earliest moment first, the lowest key at equal ones, and drops stale entries")
    func queueOrder() {
        var due: [String: Int64] = ["c": 5, "a": 5, "b": 3, "d": 9]
        var queue = DueQueue<String>()
        queue.schedule(["d", "c", "b", "a"]) { due[$0] }
        // b moves to 7 and is queued again: its entry at 3 is stale.
        due["b"] = 7
        queue.schedule(["b"]) { due[$0] }
        var popped: [String] = []
        while let (key, moment) = queue.popFirst(notAfter: 8, due: { due[$0] }) {
            #expect(due[key] == moment)
            popped.append(key)
            due[key] = nil
        }
        #expect(popped == ["a", "c", "b"])
        #expect(queue.popFirst(notAfter: 9, due: { due[$0] })! == ("d", 9))
        #expect(queue.count == 0)
    }
}
