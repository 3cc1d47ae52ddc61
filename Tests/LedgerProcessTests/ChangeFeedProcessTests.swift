import Foundation
import RPC
import TestSupport
import Testing
import Wire

/// The change feed of two ledger processes sharing one PostgreSQL database, read by a client
/// that keeps stopping and resuming, on either process and across a restart of one.
@Suite("Change feed across ledger processes", .timeLimit(.minutes(10)))
struct ChangeFeedProcessTests {
    static let writers = 4
    static let statesPerWriter = 250
    static var total: Int { writers * statesPerWriter }

    static func tag(writer: Int, index: Int) -> String { "feed-w\(writer)-\(index)" }

    /// Writer `writer`'s state `index`: one subscription per writer, store times increasing.
    static func request(writer: Int, index: Int) -> RecordVerifiedStateRequest {
        LedgerCalls.record(
            tag: tag(writer: writer, index: index), storeID: "feed-w\(writer)",
            storeTime: 1_790_000_000_000 + Int64(index))
    }

    /// What the reader saw.
    struct Reading: Sendable {
        var changes: [Change] = []
        var streams = 0
        /// Streams the restart broke, each resumed on the restarted process.
        var resumedAfterRestart: [(ledger: String, generation: Int, after: UInt64)] = []
    }

    enum Outcome: Sendable {
        case writer(Int, positions: [UInt64], sends: Int)
        case reader(Reading)
    }

    @Test(
        "4 writers on 2 ledgers, one killed and restarted: a reader resuming at random points sees 1…1000 once each, in order",
        .enabled(if: LedgerStoreFixture.serverURL != nil, "needs LEDGER_TEST_POSTGRES_URL"))
    func resumingReader() async throws {
        let store = try LedgerStoreFixture.make(.postgres)
        defer { store.remove() }
        // Both start (and migrate) at once.
        async let first = RestartableLedger(name: "ledger-a", environment: store.environment)
        async let second = RestartableLedger(name: "ledger-b", environment: store.environment)
        let ledgers = try await [first, second]
        let seed = SeededGenerator.seed(default: 0xFEED_0002)
        var random = SeededGenerator(seed: seed)
        let restartAt = Int.random(in: 250..<650, using: &random)
        let segmentLengths = (0..<100).map { _ in Int.random(in: 1...50, using: &random) }

        var writerPositions: [Int: [UInt64]] = [:]
        var sends = 0
        var reading = Reading()
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            for writer in 0..<Self.writers {
                group.addTask {
                    let ledger = ledgers[writer % 2]
                    var positions: [UInt64] = []
                    var sends = 0
                    for index in 0..<Self.statesPerWriter {
                        let (answer, sent) = try await ledger.callAcrossCrashes(
                            LedgerCalls.recordVerifiedState, Self.request(writer: writer, index: index),
                            as: RecordVerifiedStateResponse.self)
                        positions.append(answer.position)
                        sends += sent
                    }
                    return .writer(writer, positions: positions, sends: sends)
                }
            }
            group.addTask {
                .reader(
                    try await Self.follow(
                        ledgers, total: Self.total, restartAt: restartAt, segmentLengths: segmentLengths))
            }
            for try await outcome in group {
                switch outcome {
                case .writer(let writer, let positions, let sent):
                    writerPositions[writer] = positions
                    sends += sent
                case .reader(let read): reading = read
                }
            }
        }

        let positions = reading.changes.map(\.position)
        #expect(positions == Array(1...UInt64(Self.total)))
        let tags = reading.changes.map { LedgerCalls.tag(of: $0) }
        #expect(tags.allSatisfy { $0 != nil })
        var positionOfTag: [String: UInt64] = [:]
        var duplicates: [String] = []
        for (change, tag) in zip(reading.changes, tags) {
            guard let tag else { continue }
            if positionOfTag.updateValue(change.position, forKey: tag) != nil { duplicates.append(tag) }
        }
        #expect(duplicates == [])
        for writer in 0..<Self.writers {
            let expected = (0..<Self.statesPerWriter).map { positionOfTag[Self.tag(writer: writer, index: $0)] }
            // Every state of the writer, at the position its answer named, in the order written.
            #expect(expected == writerPositions[writer]?.map { Optional($0) }, "writer \(writer)")
            let found = expected.compactMap { $0 }
            #expect(found == found.sorted(), "writer \(writer)'s states out of order in the feed")
        }
        #expect(reading.resumedAfterRestart.map(\.ledger) == ["ledger-b"])
        #expect(reading.resumedAfterRestart.map(\.generation) == [1])
        #expect(await ledgers[0].kills == 0)
        #expect(await ledgers[1].kills == 1)
        #expect(try store.scalar("SELECT COUNT(*) FROM changes") == Int64(Self.total))
        #expect(try store.scalar("SELECT MAX(position) FROM changes") == Int64(Self.total))
        #expect(try store.scalar("SELECT COUNT(*) FROM events") == Int64(Self.total))

        for ledger in ledgers { #expect(await ledger.stop(crash: false) == 0) }
        print(
            "change feed [postgres] seed \(String(seed, radix: 16)): changes seen \(reading.changes.count), "
                + "streams \(reading.streams), restart after \(restartAt) changes, resumed after restart "
                + "\(reading.resumedAfterRestart), writes sent \(sends) (resent \(sends - Self.total))")
    }

    /// Reads the feed in segments of the given lengths, each a new stream from the last position
    /// seen, alternating between the two ledgers. Once `restartAt` changes are seen it reads from
    /// the second ledger, kills and restarts it mid-stream, and resumes there when the stream breaks.
    static func follow(
        _ ledgers: [RestartableLedger], total: Int, restartAt: Int, segmentLengths: [Int]
    ) async throws -> Reading {
        var reading = Reading()
        var last: UInt64 = 0
        var segment = 0
        var restarted = false
        while reading.changes.count < total {
            let restartDue = !restarted && reading.changes.count >= restartAt
            let ledger = ledgers[restartDue ? 1 : segment % 2]
            let length = segmentLengths[segment % segmentLengths.count]
            segment += 1
            var (generation, client) = await ledger.current()
            var read = 0
            // Set from the kill until the broken stream is resumed: the segment's length waits.
            var killedMidStream = false
            segmentStreams: while true {
                reading.streams += 1
                let stream = client.serverStream(
                    LedgerCalls.watchChanges, request: WatchChangesRequest(after: last).serialized(),
                    timeout: .seconds(30))
                do {
                    for try await message in stream {
                        let change = try Change(serialized: message)
                        try #require(
                            change.position == last + 1, "after position \(last) the feed gave \(change.position)")
                        last = change.position
                        reading.changes.append(change)
                        read += 1
                        if reading.changes.count == total { break }
                        if restartDue && !restarted {
                            restarted = true
                            killedMidStream = true
                            try await ledger.crash()
                        } else if read >= length && !killedMidStream {
                            break
                        }
                    }
                    stream.cancel()
                    break segmentStreams
                } catch let error as RPCError {
                    guard await ledger.wasCrashed(generation) else { throw error }
                    (generation, client) = try await ledger.client(after: generation)
                    reading.resumedAfterRestart.append((ledger.name, generation, last))
                    killedMidStream = false
                    read = 0
                }
            }
        }
        return reading
    }
}
