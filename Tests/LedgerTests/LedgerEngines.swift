import Foundation
import LedgerService
import Model
import Synchronization

/// The engines the conformance suite runs on: SQLite always; PostgreSQL when
/// LEDGER_TEST_POSTGRES_URL names a server (scripts/run-tests starts one).
enum LedgerEngine: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { rawValue }

    static var available: [LedgerEngine] {
        (ProcessInfo.processInfo.environment["LEDGER_TEST_POSTGRES_URL"] ?? "").isEmpty
            ? [.sqlite] : [.sqlite, .postgres]
    }

    /// A fresh, migrated database of this engine, and a function that removes it.
    func open(counters: CommitCounters = CommitCounters()) async throws -> (any LedgerDatabase, @Sendable () -> Void) {
        switch self {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString).db")
                .path
            let database = try SQLiteLedgerDatabase(path: path, counters: counters)
            try await database.migrate()
            return (
                database,
                {
                    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
                }
            )
        case .postgres:
            let url = ProcessInfo.processInfo.environment["LEDGER_TEST_POSTGRES_URL"]!
            let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let database = try PostgresLedgerDatabase(url: url, schema: schema, counters: counters)
            try await database.migrate()
            return (database, {})
        }
    }
}

extension LedgerEngine {
    /// Runs `body` with a ledger on a fresh database of this engine (the transfer policy
    /// `policy` by default) and the clock it reads, which the test moves.
    func withLedger(policy: TransferPolicy = .transfer, _ body: (Ledger, TestClock) async throws -> Void)
        async throws
    {
        let (database, remove) = try await open()
        defer { remove() }
        let clock = TestClock()
        try await body(Ledger(database: database, defaultTransferPolicy: policy, now: { clock.now }), clock)
        await database.close()
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let value = Mutex<Int64>(1_790_000_000_000)
    var now: Int64 { value.withLock { $0 } }
    func advance(by milliseconds: Int64) { value.withLock { $0 += milliseconds } }
}

extension SubscriptionKey {
    static func apple(_ id: String) -> SubscriptionKey {
        SubscriptionKey(store: .apple, environment: .sandbox, storeID: id)
    }
}
