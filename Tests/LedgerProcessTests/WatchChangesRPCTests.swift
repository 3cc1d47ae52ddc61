import Config
import Foundation
import Model
import RPC
import Sockets
import TestSupport
import Testing
import Wire

/// `WatchChanges` over TCP against a ledger process on SQLite.
@Suite("WatchChanges over RPC", .timeLimit(.minutes(5)))
struct WatchChangesRPCTests {
    static func tag(_ index: Int) -> String { "live-\(index)" }

    static func request(_ index: Int) -> RecordVerifiedStateRequest {
        LedgerCalls.record(tag: tag(index), storeID: "live", storeTime: 1_790_000_000_000 + Int64(index))
    }

    @Test("a stream opened before any write yields each of 20 states as it commits, in order")
    func liveChanges() async throws {
        let store = try LedgerStoreFixture.make(.sqlite)
        defer { store.remove() }
        let process = try ServiceProcess("ledger", environment: store.environment)
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await process.rpcPort())])
        let stream = client.serverStream(
            LedgerCalls.watchChanges, request: WatchChangesRequest(after: 0).serialized(), timeout: .seconds(30))
        var changes = stream.makeAsyncIterator()
        for index in 1...20 {
            let answer = try await client.call(
                LedgerCalls.recordVerifiedState, Self.request(index), as: RecordVerifiedStateResponse.self)
            #expect(answer.position == UInt64(index))
            // The write has committed and nothing else is written: the stream must yield it now.
            let change = try Change(serialized: try #require(try await changes.next()))
            #expect(change.position == UInt64(index))
            #expect(change.kind == .subscription)
            #expect(LedgerCalls.tag(of: change) == Self.tag(index))
            #expect(change.subscription?.storeTimeMilliseconds == 1_790_000_000_000 + Int64(index))
        }
        stream.cancel()
        client.shutdown()
        process.terminate()
        #expect(await process.waitForExit() == 0)
    }

    @Test("a reader whose cursor is beyond the ledger's newest position is refused, not left waiting")
    func cursorBeyondLedger() async throws {
        let store = try LedgerStoreFixture.make(.sqlite)
        defer { store.remove() }
        let process = try ServiceProcess("ledger", environment: store.environment)
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await process.rpcPort())])
        _ = try await client.call(
            LedgerCalls.recordVerifiedState, Self.request(1), as: RecordVerifiedStateResponse.self)
        let stream = client.serverStream(
            LedgerCalls.watchChanges, request: WatchChangesRequest(after: 500).serialized(), timeout: .seconds(30))
        var ending: RPCError?
        do {
            for try await _ in stream {}
        } catch {
            ending = error
        }
        #expect(ending == RPCError(.failedPrecondition, "after = 500 is beyond the newest position 1 of this ledger"))
        client.shutdown()
        process.terminate()
        #expect(await process.waitForExit() == 0)
    }

    @Test("a stream cancelled after 5 of 20 changes ends with CANCELLED; a new stream resumes at 6 and sees new writes")
    func cancelledStream() async throws {
        let store = try LedgerStoreFixture.make(.sqlite)
        defer { store.remove() }
        let process = try ServiceProcess("ledger", environment: store.environment)
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await process.rpcPort())])
        let httpPort = try await process.httpPort()
        for index in 1...20 {
            _ = try await client.call(
                LedgerCalls.recordVerifiedState, Self.request(index), as: RecordVerifiedStateResponse.self)
        }

        let first = client.serverStream(
            LedgerCalls.watchChanges, request: WatchChangesRequest(after: 0).serialized(), timeout: .seconds(30))
        var firstChanges = first.makeAsyncIterator()
        for index in 1...5 {
            let change = try Change(serialized: try #require(try await firstChanges.next()))
            #expect(change.position == UInt64(index))
        }
        first.cancel()
        // What had already arrived may still be read; then the stream ends with CANCELLED.
        var afterCancel: [UInt64] = []
        await #expect(throws: RPCError(.cancelled, "the stream was cancelled")) {
            while let message = try await firstChanges.next() {
                afterCancel.append(try Change(serialized: message).position)
            }
        }
        #expect(afterCancel == (0..<UInt64(afterCancel.count)).map { 6 + $0 })

        // The same connection serves a new stream from where the reader left off.
        let second = client.serverStream(
            LedgerCalls.watchChanges, request: WatchChangesRequest(after: 5).serialized(), timeout: .seconds(30))
        var secondChanges = second.makeAsyncIterator()
        var positions: [UInt64] = []
        for _ in 6...20 {
            positions.append(try Change(serialized: try #require(try await secondChanges.next())).position)
        }
        #expect(positions == Array(6...20))
        _ = try await client.call(
            LedgerCalls.recordVerifiedState, Self.request(21), as: RecordVerifiedStateResponse.self)
        let live = try Change(serialized: try #require(try await secondChanges.next()))
        #expect(live.position == 21)
        #expect(LedgerCalls.tag(of: live) == Self.tag(21))

        // The server took the cancel (it came before the second stream on the connection).
        let (status, metrics) = try await httpGet(port: httpPort, path: "/metrics")
        #expect(status == 200)
        #expect(
            metrics.contains(
                "rpc_server_calls_total{code=\"CANCELLED\",method=\"\(LedgerCalls.watchChanges)\"} 1\n"), "\(metrics)")
        second.cancel()
        client.shutdown()
        process.terminate()
        #expect(await process.waitForExit() == 0)
    }
}
