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
        // The lag is in the metrics: in positions (sampled each second) and in ms from the
        // newest change's commit, which here was moments ago.
        let (_, metrics) = try await httpGet(port: http, path: "/metrics")
        func gauge(_ name: String) -> Int? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
                Int($0.split(separator: " ")[1])
            }
        }
        #expect(gauge("entitlement_feed_position") == Int(moved))
        #expect(gauge("entitlement_feed_lag_positions").map { $0 >= 0 } == true)
        #expect(gauge("entitlement_feed_lag_milliseconds").map { (0..<10_000).contains($0) } == true)
        entitlement.terminate()
        #expect(await entitlement.waitForExit() == 0)
        await stack.stop()
    }

    @Test(
        "through a ledger crash and an entitlement restart during a stream of changes, the view ends equal to a fresh snapshot"
    )
    func restarts() async throws {
        let stack = try await EntitlementStack()
        var (entitlement, client, http) = try await stack.startEntitlement()
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
                (entitlement, client, http) = try await stack.startEntitlement()
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
}
