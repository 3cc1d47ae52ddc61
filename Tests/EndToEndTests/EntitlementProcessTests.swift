import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

@Suite("Entitlement service against a real ledger", .serialized)
struct EntitlementProcessTests {
    static let now: Int64 = 1_790_000_000_000
    static let future: Int64 = 4_100_000_000_000

    @Test("a purchase recorded in the ledger is granted, a transfer moves it, and an unknown account is not entitled")
    func purchaseAndTransfer() async throws {
        let stack = try await EntitlementStack()
        let (entitlement, client, http) = try await stack.startEntitlement()
        let position = try await stack.purchase(
            "2000000001", account: "alice", expires: Self.future, storeTime: Self.now)
        try await EntitlementStack.waitForPosition(position, http: http)
        let check: CheckAccessResponse = try await client.call(
            EntitlementRPC.checkAccess.name,
            CheckAccessRequest(accountID: "alice", capability: "pro"))
        #expect(check.allowed && check.untilMilliseconds == Self.future && check.grant?.key?.storeID == "2000000001")
        let moved = try await stack.link(
            SubscriptionKey(store: .apple, environment: .production, storeID: "2000000001"), account: "bob", tag: "move"
        )
        try await EntitlementStack.waitForPosition(moved, http: http)
        let answers = try await EntitlementStack.answers(client, accounts: ["alice", "bob", "nobody"], at: Self.now)
        #expect(answers.map(\.allowed) == [false, true, false])
        #expect(answers.map(\.reason) == [.noGrant, .granted, .noGrant])
        // The lag is in the metrics: in positions (sampled each second) and in seconds from the
        // newest change's commit, which here was moments ago.
        let (_, metrics) = try await httpGet(port: http, path: "/metrics")
        func gauge(_ name: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
                Double($0.split(separator: " ")[1])
            }
        }
        #expect(gauge("entitlement_feed_position") == Double(moved))
        #expect(gauge("entitlement_feed_lag_positions").map { $0 >= 0 } == true)
        #expect(gauge("entitlement_feed_lag_seconds").map { $0 >= 0 && $0 < 10 } == true)
        entitlement.terminate()
        #expect(await entitlement.waitForExit() == 0)
        await stack.stop()
    }

    @Test(
        "through a ledger crash and an entitlement restart during a stream of changes, the view ends equal to a fresh snapshot"
    )
    func restarts() async throws {
        let stack = try await EntitlementStack()
        // The instances compute the event log too, which must come through with each event once.
        let eventLog = ["EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000"]
        var (entitlement, client, http) = try await stack.startEntitlement(environment: eventLog)
        var generator = SystemRandomNumberGenerator()
        var accounts: [String] = []
        var last: UInt64 = 0
        for index in 0..<60 {
            let account = "acct-\(index % 40)"
            accounts.append(account)
            last = try await stack.purchase(
                "\(3_000_000_000 + index)", account: account,
                expires: Self.now + Int64.random(in: -5...30, using: &generator) * 86_400_000,
                storeTime: Self.now + Int64(index))
            if index == 20 { try await stack.crashLedger() }
            if index == 40 {
                entitlement.terminate()
                _ = await entitlement.waitForExit()
                client.shutdown()
                (entitlement, client, http) = try await stack.startEntitlement(environment: eventLog)
            }
            if index % 7 == 0 && index > 0 {
                last = try await stack.link(
                    SubscriptionKey(store: .apple, environment: .production, storeID: "\(3_000_000_000 + index - 3)"),
                    account: "acct-\(index % 13)", tag: "t-\(index)")
            }
        }
        try await EntitlementStack.waitForPosition(last, http: http)
        let (fresh, freshClient, freshHTTP) = try await stack.startEntitlement()
        try await EntitlementStack.waitForPosition(last, http: freshHTTP)
        let everyone = Array(Set(accounts + (0..<40).map { "acct-\($0)" })).sorted()
        let followed = try await EntitlementStack.answers(client, accounts: everyone, at: Self.now + 10 * 86_400_000)
        let snapshot = try await EntitlementStack.answers(
            freshClient, accounts: everyone, at: Self.now + 10 * 86_400_000)
        #expect(followed == snapshot)
        #expect(followed.contains { $0.allowed } && followed.contains { !$0.allowed })
        try await stack.expectEventLogComplete()
        for process in [entitlement, fresh] {
            process.terminate()
            _ = await process.waitForExit()
        }
        client.shutdown()
        freshClient.shutdown()
        await stack.stop()
    }

    @Test("two entitlement instances give identical answers for 10,000 random accounts after a burst of changes")
    func twoInstances() async throws {
        let stack = try await EntitlementStack()
        let first = try await stack.startEntitlement()
        let second = try await stack.startEntitlement()
        let positions = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    var last: UInt64 = 0
                    for index in 0..<40 {
                        let id = writer * 1000 + index
                        last = try await stack.purchase(
                            "\(4_000_000_000 + id)", account: "user-\(id % 500)",
                            expires: Self.now + Int64(id % 20 - 5) * 86_400_000, storeTime: Self.now + Int64(index))
                    }
                    return last
                }
            }
            return try await group.reduce(into: [UInt64]()) { $0.append($1) }
        }
        let last = positions.max()!
        try await EntitlementStack.waitForPosition(last, http: first.http)
        try await EntitlementStack.waitForPosition(last, http: second.http)
        var generator = SystemRandomNumberGenerator()
        let accounts = (0..<10_000).map { _ in "user-\(Int.random(in: 0..<800, using: &generator))" }
        let a = try await EntitlementStack.answers(first.client, accounts: accounts, at: Self.now)
        let b = try await EntitlementStack.answers(second.client, accounts: accounts, at: Self.now)
        #expect(a.count == 10_000 && a == b)
        #expect(a.contains { $0.allowed } && a.contains { $0.reason == .noGrant })
        for instance in [first, second] {
            instance.process.terminate()
            _ = await instance.process.waitForExit()
            instance.client.shutdown()
        }
        await stack.stop()
    }

    /// The answers of a fresh instance (no checkpoint) at `position`, for comparison.
    static func freshAnswers(_ stack: EntitlementStack, _ accounts: [String], position: UInt64) async throws
        -> [CheckAccessResponse]
    {
        let fresh = try await stack.startEntitlement()
        try await EntitlementStack.waitForPosition(position, http: fresh.http)
        let answers = try await EntitlementStack.answers(fresh.client, accounts: accounts, at: Self.now)
        fresh.process.terminate()
        _ = await fresh.process.waitForExit()
        fresh.client.shutdown()
        return answers
    }

    @Test(
        "a restart starts from the checkpoint written at shutdown and follows the changes made while it was down; a damaged checkpoint or one of another ledger is refused for a snapshot"
    )
    func checkpointRestart() async throws {
        let stack = try await EntitlementStack()
        let path = stack.directory.appendingPathComponent("view.checkpoint").path
        let settings = ["VIEW_CHECKPOINT_PATH": path, "VIEW_CHECKPOINT_INTERVAL_SECONDS": "3600"]
        let accounts = (0..<30).map { "acct-\($0)" } + ["nobody"]
        var last: UInt64 = 0
        for index in 0..<40 {
            last = try await stack.purchase(
                "\(5_000_000_000 + index)", account: "acct-\(index % 30)",
                expires: Self.now + Int64(index % 9 - 3) * 86_400_000, storeTime: Self.now + Int64(index))
        }
        let first = try await stack.startEntitlement(environment: settings)
        #expect(try await first.process.line(containing: "no checkpoint; taking a snapshot", within: 20).contains(path))
        try await EntitlementStack.waitForPosition(last, http: first.http)
        first.process.terminate()
        #expect(await first.process.waitForExit() == 0)
        first.client.shutdown()
        let written = try #require(first.process.log.first { $0.contains("checkpoint written") })
        #expect(written.contains("\"position\":\"\(last)\""))
        let checkpointed = last

        // Changes while it is down: new purchases and a transfer.
        for index in 40..<50 {
            last = try await stack.purchase(
                "\(5_000_000_000 + index)", account: "acct-\(index % 30)", expires: Self.now + 86_400_000 * 5,
                storeTime: Self.now + Int64(index))
        }
        last = try await stack.link(
            SubscriptionKey(store: .apple, environment: .production, storeID: "5000000003"), account: "acct-29",
            tag: "moved")
        let restarted = try await stack.startEntitlement(environment: settings)
        let loaded = try await restarted.process.line(containing: "checkpoint loaded", within: 20)
        #expect(loaded.contains("\"position\":\"\(checkpointed)\""))
        try await EntitlementStack.waitForPosition(last, http: restarted.http)
        #expect(!restarted.process.log.contains { $0.contains("snapshot loaded") })
        let followed = try await EntitlementStack.answers(restarted.client, accounts: accounts, at: Self.now)
        let expected = try await Self.freshAnswers(stack, accounts, position: last)
        #expect(followed == expected)
        #expect(followed.contains { $0.allowed } && followed.contains { !$0.allowed })
        restarted.process.terminate()
        #expect(await restarted.process.waitForExit() == 0)
        restarted.client.shutdown()

        // One flipped byte: refused, and the view comes from a snapshot.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count / 2] ^= 0x04
        try bytes.write(to: URL(fileURLWithPath: path))
        let damaged = try await stack.startEntitlement(environment: settings)
        #expect(
            try await damaged.process.line(containing: "checkpoint not usable", within: 20).contains(
                "checksum does not match"))
        _ = try await damaged.process.line(containing: "snapshot loaded", within: 20)
        try await EntitlementStack.waitForPosition(last, http: damaged.http)
        #expect(try await EntitlementStack.answers(damaged.client, accounts: accounts, at: Self.now) == expected)
        damaged.process.terminate()
        #expect(await damaged.process.waitForExit() == 0)
        damaged.client.shutdown()

        // The checkpoint (rewritten at that stop) taken to another ledger with more changes:
        // its change at the checkpoint's position is another, so the view takes a snapshot.
        let other = try await EntitlementStack()
        var otherLast: UInt64 = 0
        for index in 0..<Int(last) + 5 {
            otherLast = try await other.purchase(
                "\(6_000_000_000 + index)", account: "other-\(index % 7)", expires: Self.now + 86_400_000,
                storeTime: Self.now + Int64(index))
        }
        let moved = try await other.startEntitlement(environment: settings)
        #expect(
            try await moved.process.line(containing: "the ledger does not have the view's position", within: 20)
                .contains("is not the one the view applied"))
        _ = try await moved.process.line(containing: "snapshot loaded", within: 20)
        try await EntitlementStack.waitForPosition(otherLast, http: moved.http)
        let otherAccounts = accounts + (0..<7).map { "other-\($0)" }
        let answers = try await EntitlementStack.answers(moved.client, accounts: otherAccounts, at: Self.now)
        #expect(answers == (try await Self.freshAnswers(other, otherAccounts, position: otherLast)))
        #expect(answers.prefix(accounts.count).allSatisfy { !$0.allowed })
        moved.process.terminate()
        #expect(await moved.process.waitForExit() == 0)
        moved.client.shutdown()
        await other.stop()
        await stack.stop()
    }
}
