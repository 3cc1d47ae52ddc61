import Foundation
import Model
import RPC
import ServiceProcessKit
import TestSupport
import Testing
import Wire

/// The states that pass — a billing grace period, a pause — answered as they were after they
/// passed, through the whole system and the store simulator: the ledger keeps them as intervals
/// beside the periods.
@Suite("End to end: access inside a state that passed")
struct StatusIntervalScenarioTests {
    static let day: Int64 = 86_400_000

    @Test("App Store: the days of a billing grace period that ended in a recovery read allowed after the recovery")
    func appleGraceThenRecovery() async throws {
        try await StoreSimStack.with { stack in
            let account = UUID().uuidString.lowercased()
            let (original, bought) = try await stack.buyOnAppStore(account: account)
            let paidEnd = try #require(bought.subscription?.expiresTimeMilliseconds)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("apple/fail-payment", ["transactionId": original])
            // Three days past the failed renewal: in the 16 days of grace.
            try await stack.control("clock/advance", ["by": "+33d"])
            let inGrace = try await stack.eventually(account, "the grace period") {
                $0.allowed && $0.grant?.state == .gracePeriod
            }
            let graceDay = try await stack.simNow()
            #expect(graceDay > paidEnd && inGrace.untilMilliseconds == paidEnd + 16 * Self.day)
            try await stack.control("apple/recover", ["transactionId": original])
            _ = try await stack.eventually(account, "the recovery") { $0.allowed && $0.grant?.state == .active }
            try await stack.settle()
            // Asked afterwards, a day of grace reads allowed, on through the recovered period.
            for at in [paidEnd, paidEnd + Self.day, graceDay] {
                let answer = try await stack.check(account, at: at)
                #expect(answer.allowed, "at \(at)")
                #expect((answer.untilMilliseconds ?? 0) > graceDay, "at \(at)")
            }
            let stored = try await stack.stored(
                SubscriptionKey(store: .apple, environment: .sandbox, storeID: original))
            let grace = try #require(stored.subscription?.statusIntervals.first)
            #expect(stored.subscription?.statusIntervals.count == 1)
            #expect(grace.state == .gracePeriod && grace.startMilliseconds == paidEnd)
            // It ended at the recovery, where the recovered period starts.
            let recovered = try #require(stored.subscription?.periods.last?.startMilliseconds)
            #expect(recovered > graceDay && recovered < graceDay + Self.day)
            #expect(grace.endMilliseconds == recovered && grace.endedTimeMilliseconds == recovered)
            // The timeline says the same: paid, grace, paid; over the framed protocol, HTTP and subctl.
            let from = paidEnd - 31 * Self.day
            let timeline: GetAccessTimelineResponse = try await stack.entitlementClient.call(
                EntitlementRPC.getAccessTimeline.name,
                GetAccessTimelineRequest(
                    accountID: account, capability: "pro", fromMilliseconds: from, toMilliseconds: recovered + Self.day)
            )
            let intervals = try #require(timeline.capabilities.first?.intervals)
            #expect(intervals.map(\.kind) == [.paid, .grace, .paid])
            #expect(intervals.map(\.startMilliseconds) == [from, paidEnd, recovered])
            let answer = try await connectCall(
                port: stack.entitlementHTTP, method: "subscriptions.entitlement.v1.Entitlement/GetAccessTimeline",
                body: Array(#"{"accountId":"\#(account)","fromMs":"\#(from)","toMs":"\#(recovered + Self.day)"}"#.utf8))
            #expect(answer.status == 200 && answer.text.contains("TIMELINE_KIND_GRACE"), "\(answer.text)")
            let printed = try await runCommand(
                ServiceProcess.binDirectory.appendingPathComponent("subctl"),
                [
                    "access", "timeline", account, "--capability", "pro", "--from", "\(from)", "--to",
                    "\(recovered + Self.day)", "--addr", "127.0.0.1:\(try await stack.entitlement.rpcPort())",
                ])
            let lines = printed.output.split(separator: "\n").map(String.init)
            #expect(printed.status == 0 && lines.first == "capability pro" && lines.count == 5, "\(printed.output)")
            #expect(
                lines.dropFirst(2).map { $0.split(separator: " ", omittingEmptySubsequences: true)[2] } == [
                    "paid", "grace", "paid",
                ])
        }
    }

    @Test("Google Play: the days of a pause that ended in a resume read denied after the resume")
    func playPauseThenResume() async throws {
        try await StoreSimStack.with { stack in
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, bought) = try await stack.buyOnPlay(account: account)
            let paidEnd = try #require(bought.subscription?.expiresTimeMilliseconds)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("google/pause", ["purchaseToken": token, "for": "+30d"])
            try await stack.control("clock/advance", ["by": "+32d"])
            let paused = try await stack.eventually(account, "the pause") { !$0.allowed && $0.grant?.state == .paused }
            #expect(paused.reason == .stateDenies)
            let pauseDay = try await stack.simNow()
            try await stack.control("google/resume", ["purchaseToken": token])
            let resumed = try await stack.simNow()
            _ = try await stack.eventually(account, "the resume") { $0.allowed }
            try await stack.settle()
            // Asked afterwards, a day of the pause reads denied as paused; the day before it, allowed
            // until the pause began; the resume, allowed.
            let during = try await stack.check(account, at: pauseDay)
            #expect(!during.allowed && during.reason == .stateDenies)
            let before = try await stack.check(account, at: paidEnd - Self.day)
            #expect(before.allowed && before.untilMilliseconds == paidEnd)
            #expect(try await stack.check(account, at: resumed).allowed)
            let stored = try await stack.stored(
                SubscriptionKey(store: .google, environment: .production, storeID: token))
            let pause = try #require(stored.subscription?.statusIntervals.last)
            #expect(pause.state == .paused && pause.startMilliseconds == paidEnd)
            // It ended at the resume (the notification's time), before the automatic resume.
            #expect(pause.endMilliseconds.map { $0 > pauseDay && $0 <= resumed } == true)
            #expect(pause.endedTimeMilliseconds == pause.endMilliseconds)
        }
    }
}
