import Foundation
import LedgerService
import Model
import SQLite
import Testing
import Wire

@Suite("Ledger schema migrations")
struct MigrationTests {
    /// Takes a database back to before migration 9: no `unacknowledged` column or its index.
    static func dropUnacknowledgedColumn(_ tx: any LedgerTransaction) throws {
        try tx.query("DROP INDEX subscriptions_unacknowledged")
        try tx.query("ALTER TABLE subscriptions DROP COLUMN unacknowledged")
    }

    @Test(
        "a version 1 database gets the state, expiry and acknowledgement columns filled from its stored states"
    )
    func backfillsVersion1() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-migration-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ledger.sqlite").path
        // The version 1 subscriptions table as it shipped, with one stored state, and the
        // inbox and events tables later migrations add to.
        let state = Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: "1000000001"), productID: "pro",
            state: .gracePeriod, expiresTimeMilliseconds: 1_800_000_000_000, storeTimeMilliseconds: 5,
            bundleOrPackage: "com.example.app")
        // A Google purchase not acknowledged yet.
        let unacknowledged = Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: "token-1"), productID: "pro",
            state: .active, expiresTimeMilliseconds: 1_800_000_000_000, acknowledged: false, storeTimeMilliseconds: 5,
            bundleOrPackage: "com.example.app")
        do {
            let old = try SQLiteDatabase(path: path)
            try old.execute(
                """
                CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL);
                INSERT INTO schema_migrations VALUES (1, 0);
                CREATE TABLE subscriptions (
                    store INTEGER NOT NULL, environment INTEGER NOT NULL, store_id TEXT NOT NULL,
                    account_id TEXT, store_time_ms INTEGER, position INTEGER NOT NULL, state BLOB NOT NULL,
                    PRIMARY KEY (store, environment, store_id));
                CREATE TABLE events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, store INTEGER NOT NULL, environment INTEGER NOT NULL,
                    store_id TEXT NOT NULL, account_id TEXT, other_account_id TEXT,
                    position INTEGER NOT NULL, event BLOB NOT NULL);
                CREATE TABLE inbox (
                    store INTEGER NOT NULL, notification_id TEXT NOT NULL, status INTEGER NOT NULL,
                    attempts INTEGER NOT NULL, last_error TEXT, received_ms INTEGER NOT NULL,
                    entry BLOB NOT NULL,
                    PRIMARY KEY (store, notification_id));
                """)
            try old.query(
                "INSERT INTO subscriptions VALUES (1, 1, '1000000001', NULL, 5, 1, ?)", [.blob(state.serialized())])
            try old.query(
                "INSERT INTO subscriptions VALUES (2, 1, 'token-1', NULL, 5, 2, ?)",
                [.blob(unacknowledged.serialized())])
        }

        let database = try SQLiteLedgerDatabase(path: path)
        try await database.migrate()
        let ledger = Ledger(database: database)
        let found = try await ledger.verifiedStates.listSubscriptions(
            ListSubscriptionsRequest(store: .apple, state: .gracePeriod))
        #expect(found.subscriptions == [state])
        let expiring = try await ledger.verifiedStates.listSubscriptions(
            ListSubscriptionsRequest(store: .apple, expiresBeforeMilliseconds: 1_800_000_000_001))
        #expect(expiring.subscriptions.map(\.key.storeID) == ["1000000001"])
        let queue = try await ledger.verifiedStates.listSubscriptions(
            ListSubscriptionsRequest(store: .google, unacknowledged: true))
        #expect(queue.subscriptions == [unacknowledged])
        await database.close()
    }
}
