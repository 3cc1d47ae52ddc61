import BenchSupport
import Foundation
import Model
import SQLite
import Wire

/// Fills a ledger database, already migrated by the ledger itself, with `accounts` accounts
/// each owning one linked subscription (the `subscriptions` row with its account and the
/// serialized state, the `links` row, and for an App Store one a `periods` row per transaction
/// of its year, raw signed data included) and one `changes` row at position `accounts`, so that
/// a snapshot reports that position. One transaction, statements prepared once.
struct LedgerSeed {
    /// Up to this many of the seeded account ids are kept for the load's requests.
    static let sampleLimit = 262_144

    let accounts: Int
    let workload: PurchaseWorkload

    /// Account ids spread over the whole seeded set (every `accounts / sampleLimit`-th one).
    private(set) var sample: [String] = []
    /// Accounts linked in the database: the seeded ones, and in a database an earlier run kept,
    /// the fresh ones its propagation purchases added.
    private(set) var linkedAccounts = 0
    /// How long the inserts took.
    private(set) var seconds = 0.0
    /// Rows written to the `periods` table, and the bytes of their raw signed data.
    private(set) var periods = 0
    private(set) var rawBytes = 0

    init(accounts: Int, workload: PurchaseWorkload) {
        self.accounts = accounts
        self.workload = workload
    }

    /// Takes the sample of account ids from a database an earlier run seeded (every
    /// `accounts / sampleLimit`-th link, in insertion order, as `write` keeps them).
    mutating func readSample(from path: String) throws(BenchError) {
        let stride = max(1, accounts / Self.sampleLimit)
        do {
            let database = try SQLiteDatabase(path: path)
            let rows = try database.query(
                "SELECT account_id FROM links WHERE (rowid - 1) % ?1 = 0 ORDER BY rowid LIMIT ?2",
                [.integer(Int64(stride)), .integer(Int64(Self.sampleLimit))])
            sample = (0..<rows.rows.count).compactMap { rows.string($0, "account_id") }
            // The seeded accounts, and the few fresh ones an earlier run's propagation added.
            let count = try database.scalarInt("SELECT count(*) FROM links") ?? 0
            guard (accounts...(accounts + 200_000)).contains(Int(count)) else {
                throw BenchError("\(path) holds \(count) accounts, not the \(accounts) asked for")
            }
            linkedAccounts = Int(count)
            // What the earlier run seeded: the rows counted, their raw size from a sample (the
            // raw data is gigabytes at this size, not worth reading for a mean).
            periods = Int(try database.scalarInt("SELECT count(*) FROM periods") ?? 0)
            let sampled = try database.query(
                "SELECT count(*) AS n, coalesce(sum(length(raw)), 0) AS bytes FROM (SELECT raw FROM periods LIMIT 10000)"
            )
            let sampledRows = Int(sampled.int64(0, "n") ?? 0)
            let sampledBytes = Int(sampled.int64(0, "bytes") ?? 0)
            rawBytes = sampledRows == 0 ? 0 : sampledBytes * periods / sampledRows
        } catch let error as BenchError {
            throw error
        } catch {
            throw BenchError("reading \(path): \(error)")
        }
    }

    /// Inserts the rows into the database at `path`. Throws on any SQLite error.
    mutating func write(to path: String) throws(BenchError) {
        let start = ContinuousClock.now
        let stride = max(1, accounts / Self.sampleLimit)
        var sample: [String] = []
        sample.reserveCapacity(min(accounts, Self.sampleLimit))
        let workload = self.workload
        let accounts = self.accounts
        do {
            let database = try SQLiteDatabase(path: path)
            // A large page cache keeps the random-order index inserts (UUIDs, tokens) in memory.
            try database.execute("PRAGMA cache_size = -1048576")
            // The bulk insert goes through a rollback journal without syncs: a WAL would hold the
            // whole transaction (gigabytes of periods) and then copy it into the file. The ledger
            // opens it in WAL mode again.
            try database.execute("PRAGMA journal_mode = DELETE")
            try database.execute("PRAGMA synchronous = OFF")
            var periodRows = 0
            var rawBytes = 0
            try database.transaction { tx in
                var random = FastRandom()
                var last: Subscription?
                for index in 0..<accounts {
                    let accountID = random.uuidString()
                    let seeded = workload.seeded(index: index, accountID: accountID, random: &random)
                    let subscription = seeded.subscription
                    let key = subscription.key
                    let keyValues: [SQLiteValue] = [
                        .integer(Int64(key.store.rawValue)), .integer(Int64(key.environment.rawValue)),
                        .text(key.storeID),
                    ]
                    try tx.query(
                        """
                        INSERT INTO subscriptions
                            (store, environment, store_id, account_id, store_time_ms, position, state, state_code, expires_ms)
                        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                        """,
                        keyValues + [
                            .text(accountID), .integer(subscription.storeTimeMilliseconds ?? 0),
                            .integer(Int64(index + 1)), .blob(subscription.serialized()),
                            .integer(Int64(SubscriptionState.active.rawValue)),
                            .integer(subscription.expiresTimeMilliseconds ?? 0),
                        ])
                    try tx.query(
                        """
                        INSERT INTO links (store, environment, store_id, account_id, store_account_ref, linked_ms)
                        VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                        """,
                        keyValues + [
                            .text(accountID), subscription.storeAccountRef.map { .text($0) } ?? .null,
                            .integer(subscription.verifiedTimeMilliseconds ?? workload.now),
                        ])
                    for period in seeded.periods where workload.periodRows {
                        var bare = period
                        bare.raw = nil
                        try tx.query(
                            """
                            INSERT INTO periods (store, environment, store_id, period_id, start_ms, period, raw)
                            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                            """,
                            keyValues + [
                                .text(period.periodID), .integer(period.startMilliseconds),
                                .blob(bare.serialized()), period.raw.map { .text($0) } ?? .null,
                            ])
                        rawBytes += period.raw?.utf8.count ?? 0
                    }
                    periodRows += workload.periodRows ? seeded.periods.count : 0
                    if index % stride == 0 && sample.count < Self.sampleLimit { sample.append(accountID) }
                    if index == accounts - 1 { last = subscription }
                }
                // The newest position is the highest in `changes`; the snapshot reports it.
                let change = Change(
                    position: UInt64(accounts), committedTimeMilliseconds: workload.now, kind: .subscription,
                    subscription: last)
                try tx.query(
                    "INSERT INTO changes (position, committed_ms, change) VALUES (?1, ?2, ?3)",
                    [.integer(Int64(accounts)), .integer(workload.now), .blob(change.serialized())])
            }
            try database.execute("PRAGMA journal_mode = WAL")
            // What the seeding wrote (gigabytes at a year of renewals) reaches the disk before the
            // timed start: otherwise the ledger's first reads compete with the kernel writing it
            // back, which a ledger restarted on a settled database does not see.
            let descriptor = open(path, O_RDONLY)
            guard descriptor >= 0, fsync(descriptor) == 0 else {
                throw BenchError("flushing \(path) to disk: errno \(errno)")
            }
            close(descriptor)
            self.periods = periodRows
            self.rawBytes = rawBytes
        } catch {
            throw BenchError("seeding \(path): \(error)")
        }
        self.sample = sample
        linkedAccounts = accounts
        let elapsed = ContinuousClock.now - start
        seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
