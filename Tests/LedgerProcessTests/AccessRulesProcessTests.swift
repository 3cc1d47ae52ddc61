import Config
import Foundation
import Model
import RPC
import SQLite
import Sockets
import TestSupport
import Testing
import Wire

/// A ledger process that starts on a database whose states were derived under older access
/// rules derives them again by itself.
@Suite("Access rules at start", .timeLimit(.minutes(5)))
struct AccessRulesProcessTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_790_000_000_000

    static func month(_ n: Int64, revoked: Int64? = nil) -> Period { Period.month(n, from: t0, revoked: revoked) }

    static func start(_ store: LedgerStoreFixture) async throws -> (ServiceProcess, RPCClient) {
        let process = try ServiceProcess("ledger", environment: store.environment)
        return (process, try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await process.rpcPort())]))
    }

    static func stop(_ process: ServiceProcess, _ client: RPCClient) async {
        client.shutdown()
        process.terminate()
        _ = await process.waitForExit()
    }

    @Test(
        "restarted on a stale state with no rules version recorded: the state is written again as a change, and logged")
    func derivedAgainAtStart() async throws {
        let store = try LedgerStoreFixture.make(.sqlite)
        defer { store.remove() }
        let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "7000")
        // Family shared, revoked while the renewal charged early waited: both months end at the REVOKE.
        let revokedAt = Self.t0 + 30 * Self.day - Self.day / 2
        var (process, client) = try await Self.start(store)
        let recorded: RecordVerifiedStateResponse = try await client.call(
            LedgerCalls.recordVerifiedState,
            RecordVerifiedStateRequest(
                idempotencyKey: "shared",
                subscription: Subscription(
                    key: key, productID: "pro.monthly", productKind: .autoRenewable, state: .revoked,
                    ownership: .familyShared, expiresTimeMilliseconds: Self.t0 + 60 * Self.day,
                    storeTimeMilliseconds: revokedAt, bundleOrPackage: "com.example.app"),
                periods: [Self.month(0, revoked: revokedAt), Self.month(1)]),
            as: RecordVerifiedStateResponse.self)
        let derived = try #require(recorded.subscription)
        #expect(derived.periods.allSatisfy { $0.revokedTimeMilliseconds == revokedAt })
        await Self.stop(process, client)
        // The database as an older ledger left it: the renewal's month granting, no version.
        var stale = derived
        stale.periods = Period.accessPeriods(
            [Self.month(0, revoked: revokedAt), Self.month(1)], clipsAtNextStart: true)
        #expect(stale.periods != derived.periods)
        let file = try SQLiteDatabase(path: try #require(store.environment["LEDGER_SQLITE_PATH"]))
        _ = try file.query("UPDATE subscriptions SET state = ?1 WHERE store_id = '7000'", [.blob(stale.serialized())])
        _ = try file.query("DELETE FROM cursors WHERE name = 'ledger.access-rules'")

        (process, client) = try await Self.start(store)
        let line = try await process.line(containing: "App Store access periods derived again", within: 30)
        #expect(line.contains(#""read":"1""#) && line.contains(#""changed":"1""#))
        let now: GetSubscriptionResponse = try await client.call(
            "\(LedgerCalls.service)/GetSubscription", GetSubscriptionRequest(key: key, stateOnly: true),
            as: GetSubscriptionResponse.self)
        #expect(now.subscription?.periods == derived.periods)
        let cursor: Cursor = try await client.call(
            "\(LedgerCalls.service)/GetCursor", GetCursorRequest(name: "ledger.access-rules"), as: Cursor.self)
        #expect(cursor.value == 2)  // the App Store access rules version this ledger derives under
        // The next start finds nothing to do.
        await Self.stop(process, client)
        (process, client) = try await Self.start(store)
        _ = try await process.line(containing: "access periods are derived under the current rules", within: 30)
        #expect(!process.log.contains { $0.contains("derived again") })
        await Self.stop(process, client)
    }
}
