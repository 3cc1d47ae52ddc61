import Foundation
import LedgerService
import Model
import SQLite
import ServiceProcessKit
import Testing
import Wire

let canMountTmpfs: Bool = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

/// SQLite on a tmpfs of a few hundred KiB: writes that do not fit fail cleanly and are not
/// acknowledged, what was acknowledged stays, and the file is writable again once there is room.
@Suite("Ledger on a full disk", .enabled(if: canMountTmpfs, "needs root to mount a small tmpfs"))
struct DiskFullTests {
    static func run(_ arguments: [String]) throws -> Int32 {
        try SpawnedProcess.run(URL(fileURLWithPath: "/bin/" + arguments[0]), Array(arguments.dropFirst())).status
    }

    @Test("a full disk fails writes with a clear error, keeps every acknowledged write, and recovers")
    func diskFull() async throws {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ledger-full-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        guard try Self.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", mountPoint.path]) == 0 else {
            // Containers may refuse mounts even to root; say so instead of passing silently.
            Issue.record("mount -t tmpfs failed: this test needs a machine where root may mount tmpfs")
            return
        }
        defer {
            _ = try? Self.run(["umount", mountPoint.path])
            try? FileManager.default.removeItem(at: mountPoint)
        }
        let path = mountPoint.appendingPathComponent("ledger.sqlite").path
        let database = try SQLiteLedgerDatabase(path: path)
        try await database.migrate()
        let ledger = Ledger(database: database)
        var acknowledged: [SubscriptionKey] = []
        var failure: (any Error)?
        for index in 0..<2000 {
            let key = SubscriptionKey(store: .google, environment: .production, storeID: "token-\(index)")
            let request = RecordVerifiedStateRequest(
                idempotencyKey: "fill-\(index)",
                subscription: Subscription(
                    key: key, productID: "pro", state: .active, storeTimeMilliseconds: 1_000,
                    bundleOrPackage: "com.example"),
                events: [LifecycleEvent(key: key, kind: .purchased, rawPayload: String(repeating: "x", count: 2000))])
            do {
                _ = try await ledger.verifiedStates.recordVerifiedState(request)
                acknowledged.append(key)
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "the 400 KiB disk never filled")
        #expect(
            error as? LedgerError == LedgerError.resourceExhausted("the ledger's disk is full; nothing was recorded"))
        #expect(!acknowledged.isEmpty)
        // Every acknowledged write is there; the failed one is not.
        for key in acknowledged { _ = try await ledger.verifiedStates.subscription(key) }
        let failedKey = SubscriptionKey(
            store: .google, environment: .production, storeID: "token-\(acknowledged.count)")
        await #expect(throws: LedgerError.notFound("no subscription \(failedKey)")) {
            _ = try await ledger.verifiedStates.subscription(failedKey)
        }
        // Room again: the same database takes writes.
        #expect(try Self.run(["mount", "-o", "remount,size=16m", mountPoint.path]) == 0)
        let retried = try await ledger.verifiedStates.recordVerifiedState(
            RecordVerifiedStateRequest(
                idempotencyKey: "fill-\(acknowledged.count)",
                subscription: Subscription(
                    key: failedKey, productID: "pro", state: .active, storeTimeMilliseconds: 1_000,
                    bundleOrPackage: "com.example"),
                events: [LifecycleEvent(key: failedKey, kind: .purchased)]))
        #expect(retried.applied && !retried.replayed)
        #expect(try database.integrityCheck() == "ok")
        let changes = try await ledger.changeFeed.changes(after: 0, limit: 5000)
        #expect(changes.count == acknowledged.count + 1)
        #expect(changes.map(\.position) == Array(UInt64(1)...UInt64(acknowledged.count + 1)))
        await database.close()
    }
}
