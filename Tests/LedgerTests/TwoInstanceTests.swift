import Foundation
import LedgerService
import Model
import Testing
import Wire

/// Two ledger instances on one PostgreSQL database, racing on the same subscription.
@Suite(
    "Two ledger instances on one PostgreSQL",
    .enabled(
        if: !(ProcessInfo.processInfo.environment["LEDGER_TEST_POSTGRES_URL"] ?? "").isEmpty,
        "LEDGER_TEST_POSTGRES_URL is not set; scripts/run-tests starts a server and sets it"))
struct TwoInstanceTests {
    func withTwoLedgers(policy: TransferPolicy = .transfer, _ body: (Ledger, Ledger) async throws -> Void) async throws
    {
        let url = ProcessInfo.processInfo.environment["LEDGER_TEST_POSTGRES_URL"]!
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let first = try PostgresLedgerDatabase(url: url, schema: schema)
        let second = try PostgresLedgerDatabase(url: url, schema: schema)
        try await first.migrate()
        try await second.migrate()
        try await body(
            Ledger(database: first, defaultTransferPolicy: policy),
            Ledger(database: second, defaultTransferPolicy: policy))
        await first.close()
        await second.close()
    }

    static func state(_ key: SubscriptionKey, _ storeTime: Int64) -> RecordVerifiedStateRequest {
        RecordVerifiedStateRequest(
            idempotencyKey: "\(key.storeID)-\(storeTime)",
            subscription: Subscription(
                key: key, productID: "pro", state: storeTime % 2 == 0 ? .active : .gracePeriod,
                storeTimeMilliseconds: storeTime, bundleOrPackage: "com.example"),
            events: [LifecycleEvent(key: key, kind: .renewed, storeTimeMilliseconds: storeTime)])
    }

    @Test("facts recorded through both instances at once end at the newest store time")
    func newestWins() async throws {
        try await withTwoLedgers { first, second in
            let key = SubscriptionKey(store: .apple, environment: .production, storeID: "race-1")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for time in Array(1...40).shuffled() {
                    let ledger = time % 2 == 0 ? first : second
                    group.addTask {
                        _ = try await ledger.verifiedStates.recordVerifiedState(Self.state(key, Int64(time)))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await first.verifiedStates.subscription(key).storeTimeMilliseconds == 40)
            let changes = try await first.changeFeed.changes(after: 0, limit: 100)
            #expect(changes.map(\.position) == Array(UInt64(1)...40))
        }
    }

    @Test("two claims under refuse from two instances: one account links, the other is refused")
    func refuseRace() async throws {
        try await withTwoLedgers(policy: .refuse) { first, second in
            let key = SubscriptionKey(store: .google, environment: .production, storeID: "race-2")
            async let x = first.accounts.linkAccount(
                LinkAccountRequest(idempotencyKey: "x", key: key, accountID: "xavier"))
            async let y = second.accounts.linkAccount(
                LinkAccountRequest(idempotencyKey: "y", key: key, accountID: "yvonne"))
            let outcomes = try await [x.outcome, y.outcome]
            #expect(outcomes.filter { $0 == .linked }.count == 1)
            #expect(outcomes.filter { $0 == .refused }.count == 1)
        }
    }

    @Test("the same idempotency key through both instances records once and replays once")
    func idempotencyRace() async throws {
        try await withTwoLedgers { first, second in
            let key = SubscriptionKey(store: .apple, environment: .production, storeID: "race-3")
            async let a = first.verifiedStates.recordVerifiedState(Self.state(key, 7))
            async let b = second.verifiedStates.recordVerifiedState(Self.state(key, 7))
            let answers = try await [a, b]
            #expect(answers.filter(\.replayed).count == 1)
            #expect(answers[0].position == answers[1].position)
            #expect(try await first.accounts.history(GetHistoryRequest(key: key)).events.count == 1)
        }
    }
}
