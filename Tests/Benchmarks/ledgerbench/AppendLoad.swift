import BenchSupport
import Config
import Dispatch
import RPC
import Synchronization
import Wire

/// Closed-loop writers over one multiplexed RPC connection: each of `writers` tasks sends one
/// RecordVerifiedState, waits for its answer (durable once answered), and sends the next, until
/// the phase's time is up or it has sent `maxPerWriter`.
struct AppendLoad {
    /// What one phase measured.
    struct Outcome {
        var succeeded = 0
        var failed = 0
        var seconds = 0.0
        var latencies = LatencySamples(capacity: 0)
        var firstFailure: String?
    }

    /// One writer's share of a phase.
    private struct WriterResult: Sendable {
        var latencies: [UInt64] = []
        var failed = 0
        var firstFailure: String?
    }

    let client: RPCClient
    let workload: AppendWorkload

    /// Connects a client to 127.0.0.1:`port` (the connection opens on the first call).
    init(port: Int, workload: AppendWorkload) throws(BenchError) {
        do {
            client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: port)])
        } catch {
            throw BenchError("cannot make an RPC client: \(error)")
        }
        self.workload = workload
    }

    /// Runs `writers` writers for `seconds` (each at most `maxPerWriter` appends) and blocks the
    /// calling thread, which must not be one of Swift's cooperative pool, until all are done.
    func run(phase: String, writers: Int, seconds: Double, maxPerWriter: Int = 1_000_000) -> Outcome {
        let client = self.client
        let workload = self.workload
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int64(seconds * 1000))
        let results = Self.blocking {
            await withTaskGroup(of: WriterResult.self, returning: [WriterResult].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var result = WriterResult()
                        result.latencies.reserveCapacity(min(maxPerWriter, 200_000))
                        var sequence = 0
                        while sequence < maxPerWriter && ContinuousClock.now < deadline {
                            let request = workload.request(phase: phase, writer: writer, sequence: sequence)
                            sequence += 1
                            let sent = ContinuousClock.now
                            do {
                                let response = try await client.call(
                                    AppendWorkload.method, request, as: RecordVerifiedStateResponse.self)
                                guard response.applied && !response.replayed else {
                                    throw RPCError(
                                        .internalError, "append \(request.idempotencyKey) was not newly applied")
                                }
                                let elapsed = ContinuousClock.now - sent
                                result.latencies.append(
                                    UInt64(elapsed.components.seconds) * 1_000_000_000
                                        + UInt64(elapsed.components.attoseconds / 1_000_000_000))
                            } catch {
                                result.failed += 1
                                result.firstFailure = result.firstFailure ?? "\(error)"
                            }
                        }
                        return result
                    }
                }
                var all: [WriterResult] = []
                for await result in group { all.append(result) }
                return all
            }
        }
        let elapsed = ContinuousClock.now - start
        var outcome = Outcome()
        outcome.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        outcome.latencies = LatencySamples(capacity: results.reduce(0) { $0 + $1.latencies.count })
        for result in results {
            for latency in result.latencies { outcome.latencies.record(nanoseconds: latency) }
            outcome.succeeded += result.latencies.count
            outcome.failed += result.failed
            outcome.firstFailure = outcome.firstFailure ?? result.firstFailure
        }
        return outcome
    }

    /// Closes the connection.
    func shutdown() { client.shutdown() }

    /// Runs `body` in a detached task and blocks the calling thread until it finishes.
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let result = await body()
            box.value.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.value.withLock { $0! }
    }
}

/// Hands a task's result to the thread that waits for it.
private final class ResultBox<T: Sendable>: Sendable {
    let value = Mutex<T?>(nil)
}
