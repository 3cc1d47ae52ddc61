import Foundation
import Glibc
import RPC
import TestSupport
import Testing
import Wire

/// The ledger process killed with SIGKILL while it ingests: nothing acknowledged is lost,
/// nothing resent is recorded twice, and the SQLite file stays sound.
@Suite("Ledger process crash safety", .serialized, .timeLimit(.minutes(10)))
struct CrashSafetyTests {
    static let requests = 10_000
    static let inFlight = 16
    static let kills = 5

    @Test(
        "10,000 states recorded across 5 SIGKILLs, unacknowledged ones resent: the feed holds each exactly once at 1…10,000",
        arguments: LedgerStoreFixture.Engine.available)
    func ingestAcrossKills(engine: LedgerStoreFixture.Engine) async throws {
        let store = try LedgerStoreFixture.make(engine)
        defer { store.remove() }
        let seed = SeededGenerator.seed(default: engine == .sqlite ? 0x5EED_0001 : 0x5EED_0002)
        var random = SeededGenerator(seed: seed)
        // The kills fall after a random number of acknowledgements each, spread over the run, and
        // then a random 0…5 ms later: not always just after a batch was answered, but also while
        // the next one is being written or committed (fault injection, not a wait for a state).
        let killPoints = (0..<Self.kills).map { _ in Int.random(in: 500..<(Self.requests - 500), using: &random) }
            .sorted()
        let killDelays = killPoints.map { _ in Duration.microseconds(Int.random(in: 0...5_000, using: &random)) }
        let ledger = try await RestartableLedger(name: "ledger-\(engine)", environment: store.environment)
        let progress = IngestProgress(total: Self.requests)
        let started = ContinuousClock.now

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for (point, delay) in zip(killPoints, killDelays) {
                    await progress.waitUntilAcknowledged(point)
                    try await Task.sleep(for: delay)
                    if await progress.wasAborted { return }
                    try await ledger.crash()
                }
            }
            for _ in 0..<Self.inFlight {
                group.addTask {
                    do {
                        while let index = await progress.take() {
                            let (answer, sends) = try await ledger.callAcrossCrashes(
                                LedgerCalls.recordVerifiedState, Self.request(index),
                                as: RecordVerifiedStateResponse.self)
                            await progress.acknowledge(index, answer, sends: sends)
                        }
                    } catch {
                        await progress.abort()
                        throw error
                    }
                }
            }
            try await group.waitForAll()
        }
        let ingestTime = ContinuousClock.now - started

        let answers = await progress.answers
        let acknowledged = await progress.acknowledged
        let resent = await progress.sends - acknowledged
        let replayed = answers.filter { $0?.replayed == true }.count
        #expect(acknowledged == Self.requests)
        #expect(await ledger.kills == Self.kills)
        #expect(answers.allSatisfy { $0?.applied == true })

        // The whole feed from the start, on the last generation.
        let changes = try await Self.readFeed(from: await ledger.current().client, count: Self.requests)
        #expect(changes.map(\.position) == Array(1...UInt64(Self.requests)))
        let tags = changes.map { LedgerCalls.tag(of: $0) }
        var positionOfTag: [String: UInt64] = [:]
        var duplicates: [String] = []
        for (change, tag) in zip(changes, tags) {
            guard let tag else { continue }
            if positionOfTag.updateValue(change.position, forKey: tag) != nil { duplicates.append(tag) }
        }
        #expect(duplicates == [])
        #expect(tags.allSatisfy { $0 != nil })
        #expect(Set(positionOfTag.keys) == Set((0..<Self.requests).map(Self.tag)))
        // Each answer, first or replayed, names the position where its event sits.
        let misplaced = (0..<Self.requests).filter { positionOfTag[Self.tag($0)] != answers[$0]?.position }
        #expect(misplaced == [])

        // The last generation is killed too: the file is checked as a crash leaves it.
        #expect(await ledger.stop(crash: true) == SIGKILL)
        let stored = try (
            changes: store.scalar("SELECT COUNT(*) FROM changes"),
            lastPosition: store.scalar("SELECT MAX(position) FROM changes"),
            events: store.scalar("SELECT COUNT(*) FROM events"),
            idempotency: store.scalar("SELECT COUNT(*) FROM idempotency"),
            subscriptions: store.scalar("SELECT COUNT(*) FROM subscriptions")
        )
        let total = Int64(Self.requests)
        #expect(stored.changes == total)
        #expect(stored.lastPosition == total)
        #expect(stored.events == total)
        #expect(stored.idempotency == total)
        #expect(stored.subscriptions == total)
        let integrity = try store.integrityCheck()
        if engine == .sqlite { #expect(integrity == "ok") }

        print(
            "crash safety [\(engine)] seed \(String(seed, radix: 16)): requests \(Self.requests), acknowledged \(acknowledged), "
                + "resent \(resent) (answered as replays \(replayed)), kills \(await ledger.kills) at acknowledgements "
                + "\(killPoints) + \(killDelays), final events in feed \(changes.count), stored events \(stored.events ?? -1), "
                + "integrity \(integrity ?? "n/a"), ingest \(ingestTime)")
    }

    static func tag(_ index: Int) -> String { "crash-\(index)" }

    /// Request `index`: its own subscription, its own idempotency key.
    static func request(_ index: Int) -> RecordVerifiedStateRequest {
        LedgerCalls.record(tag: tag(index), storeID: tag(index), storeTime: 1_790_000_000_000 + Int64(index))
    }

    /// The first `count` changes of the feed; the stream's deadline ends a feed that has fewer.
    static func readFeed(from client: RPCClient, count: Int) async throws -> [Change] {
        let stream = client.serverStream(
            LedgerCalls.watchChanges, request: WatchChangesRequest(after: 0).serialized(), timeout: .seconds(60))
        var changes: [Change] = []
        changes.reserveCapacity(count)
        for try await message in stream {
            changes.append(try Change(serialized: message))
            if changes.count == count { break }
        }
        stream.cancel()
        return changes
    }
}
