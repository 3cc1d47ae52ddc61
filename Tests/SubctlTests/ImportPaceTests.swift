import Foundation
import Model
import RPC
import Sockets
import SubctlKit
import Synchronization
import Testing
import Wire

@Suite("subctl import: the pace concurrent calls share, and the calls in flight")
struct ImportPaceTests {
    @Test("starts are spaced by the rate, never before now, and a rate limit's pause holds back every start")
    func pace() {
        let zero = ContinuousClock.now
        var state = ImportPace.State(spacing: .milliseconds(100))
        #expect(state.reserve(now: zero) == zero)
        #expect(state.reserve(now: zero) == zero + .milliseconds(100))
        #expect(state.reserve(now: zero + .milliseconds(50)) == zero + .milliseconds(200))
        // Idle for a while: the next start is now, not a burst to catch up.
        #expect(state.reserve(now: zero + .seconds(5)) == zero + .seconds(5))
        // A start handed out before a pause began is held back by it; one after is not.
        let handedOut = state.reserve(now: zero + .seconds(5))
        state.pause(until: zero + .seconds(7))
        #expect(state.holds(handedOut))
        let afterPause = state.reserve(now: zero + .seconds(6))
        #expect(afterPause == zero + .seconds(7))
        #expect(!state.holds(afterPause))
        #expect(state.reserve(now: zero + .seconds(6)) == zero + .seconds(7) + .milliseconds(100))
        // A shorter pause does not cut a longer one short.
        state.pause(until: zero + .seconds(6))
        #expect(state.pausedUntil == zero + .seconds(7))
    }

    // A run that kept fewer calls going than --concurrency would leave the transport holding
    // them: the time limit fails it.
    @Test(
        "a run keeps as many calls in flight as --concurrency, no more, and records each outcome once",
        .timeLimit(.minutes(5)))
    func concurrency() async throws {
        let (directory, input) = try Self.appleFile(40)
        defer { try? FileManager.default.removeItem(at: directory) }
        for limit in [1, 4] {
            let transport = InFlightTransport(hold: limit, total: 40)
            let options = ImportOptions(
                path: input, rate: 1000, concurrency: limit, progressPath: input + ".progress-\(limit)",
                call: CallOptions(address: HostPort(host: "127.0.0.1", port: 7001), timeout: .seconds(5)))
            let report = try await ImportRun(options: options, transport: transport).run()
            #expect(report.imported == 40 && report.notDone == 0)
            #expect(transport.state.withLock { $0.most } == limit)
            #expect(transport.state.withLock { Set($0.ids).count == 40 && $0.ids.count == 40 })
            let lines = try String(contentsOfFile: input + ".progress-\(limit)", encoding: .utf8)
                .split(separator: "\n")
            #expect(lines.count == 40)
        }
    }

    @Test("a rate limit met by one call pauses the others for the wait it names")
    func rateLimitPausesAll() async throws {
        let (directory, input) = try Self.appleFile(12)
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = InFlightTransport(rateLimited: 1)
        let options = ImportOptions(
            path: input, rate: 1000, concurrency: 4,
            call: CallOptions(address: HostPort(host: "127.0.0.1", port: 7001), timeout: .seconds(5)))
        let started = ContinuousClock.now
        let report = try await ImportRun(options: options, transport: transport).run()
        #expect(report.imported == 12)
        // The first call was refused "after 1 s": only the calls already on their way started in
        // that second (without the shared pause the other three would have done the other 11).
        let starts = transport.state.withLock { $0.starts }
        #expect(starts.count == 13)
        #expect(starts.filter { $0 - started < .seconds(1) }.count <= 4, "\(starts.map { $0 - started })")
        #expect(ContinuousClock.now - started >= .seconds(1))
    }

    /// A new directory holding `subs.csv`: `count` App Store subscriptions, one an account.
    static func appleFile(_ count: Int) throws -> (directory: URL, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let input = directory.appendingPathComponent("subs.csv").path
        let rows = (0..<count).map { "acct-\($0),apple,production,\(5_000_000_000 + $0),,," }
        try (["account_id,store,environment,transaction_id,purchase_token,package_name,product_id"] + rows)
            .joined(separator: "\n").write(toFile: input, atomically: true, encoding: .utf8)
        return (directory, input)
    }
}

/// Answers RestorePurchases linking every id, counting the calls in flight: a call is held
/// until `hold` calls are in flight (or the last of `total` has come), so that a run that can
/// keep that many going does; the first `rateLimited` calls are refused at once with the
/// store's rate limit "after 1 s".
final class InFlightTransport: RestoreAnswering {
    struct State {
        var inFlight = 0
        var most = 0
        var ids: [String] = []
        var starts: [ContinuousClock.Instant] = []
        var held: [CheckedContinuation<Void, Never>] = []
    }
    let state = Mutex(State())
    let rateLimited: Int
    let hold: Int
    let total: Int

    init(rateLimited: Int = 0, hold: Int = 1, total: Int = .max) {
        self.rateLimited = rateLimited
        self.hold = hold
        self.total = total
    }

    func restore(_ request: RestorePurchasesRequest) async throws(SubctlError) -> RestorePurchasesResponse {
        let call = state.withLock {
            $0.inFlight += 1
            $0.most = max($0.most, $0.inFlight)
            $0.starts.append(ContinuousClock.now)
            return $0.starts.count
        }
        if call <= rateLimited {
            state.withLock { $0.inFlight -= 1 }
            throw SubctlError(.rpc(.resourceExhausted), "RATE_LIMIT_EXCEEDED; try again after 1 s (Retry-After)")
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.held.append(continuation)
                guard state.inFlight >= hold || state.starts.count >= total else { return [] }
                defer { state.held = [] }
                return state.held
            }
            for waiter in released { waiter.resume() }
        }
        state.withLock { $0.inFlight -= 1 }
        let id = request.appleTransactionIDs.first ?? ""
        state.withLock { $0.ids.append(id) }
        let key = SubscriptionKey(store: .apple, environment: .production, storeID: id)
        return RestorePurchasesResponse(restored: [RestoredPurchase(key: key, link: .linked)])
    }
}
