import AppStore
import BenchSupport
import Foundation
import Synchronization

/// Verifications of one JWS through one verifier for a fixed time, on one or more threads.
struct VerifyLoad: Sendable {
    let verifier: AppleSignedDataVerifier
    let jws: String
    /// The transaction id every verification must return.
    let expectedTransactionID: String

    /// What a run did: verifications, and rates over wall-clock and over CPU time.
    struct Result {
        var verifications: Int
        var threads: Int
        /// The sum over threads of verifications ÷ that thread's elapsed (wall-clock) seconds:
        /// the throughput.
        var perWallSecond: Double
        /// The sum over threads of verifications ÷ that thread's CPU seconds (user and system),
        /// the divisor `openssl speed` uses by default (it counts user time only).
        var perCPUSecond: Double
        /// The threads' CPU seconds ÷ their wall-clock seconds, averaged: below 1 when other
        /// work took the cores from them.
        var cpuShare: Double
    }

    /// Runs `threads` threads at once, each verifying for `seconds`. Throws when any
    /// verification fails or returns another transaction.
    func run(threads: Int, seconds: Double) throws(BenchError) -> Result {
        let outcomes = Outcomes()
        let finished = DispatchGroup()
        let load = self
        for _ in 0..<threads {
            finished.enter()
            let thread = Thread {
                let outcome = Swift.Result { () throws(BenchError) -> ThreadRun in
                    try load.loop(seconds: seconds)
                }
                outcomes.list.withLock { $0.append(outcome) }
                finished.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        finished.wait()
        var result = Result(verifications: 0, threads: threads, perWallSecond: 0, perCPUSecond: 0, cpuShare: 0)
        for outcome in outcomes.list.withLock({ $0 }) {
            let run = try outcome.get()
            result.verifications += run.count
            result.perWallSecond += Double(run.count) / run.wall
            result.perCPUSecond += Double(run.count) / run.cpu
            result.cpuShare += run.cpu / run.wall / Double(threads)
        }
        return result
    }

    /// What each thread ended with, shared by the threads.
    private final class Outcomes: Sendable {
        let list = Mutex<[Swift.Result<ThreadRun, BenchError>]>([])
    }

    /// What one thread did: verifications, wall-clock and CPU seconds.
    struct ThreadRun {
        var count: Int
        var wall: Double
        var cpu: Double
    }

    /// One thread's loop: verify until `seconds` have passed (at least 8 calls; the clock is
    /// read every 8).
    private func loop(seconds: Double) throws(BenchError) -> ThreadRun {
        let clock = ContinuousClock()
        let cpuStart = Self.threadCPUSeconds()
        let start = clock.now
        let deadline = start + .milliseconds(Int64(seconds * 1000))
        var count = 0
        repeat {
            for _ in 0..<8 {
                try verifyOnce(number: count + 1)
                count += 1
            }
        } while clock.now < deadline
        let elapsed = start.duration(to: clock.now)
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return ThreadRun(count: count, wall: wall, cpu: max(Self.threadCPUSeconds() - cpuStart, 1e-9))
    }

    /// `count` verifications on the calling thread: the CPU seconds they took.
    func cpuSeconds(count: Int) throws(BenchError) -> Double {
        let cpuStart = Self.threadCPUSeconds()
        for number in 1...max(1, count) { try verifyOnce(number: number) }
        return Self.threadCPUSeconds() - cpuStart
    }

    /// One verification, which must return the expected transaction.
    private func verifyOnce(number: Int) throws(BenchError) {
        let transaction: AppleTransaction
        do {
            transaction = try verifier.verifyTransaction(jws, now: Date())
        } catch {
            throw BenchError("verification \(number) failed: \(error)")
        }
        guard transaction.transactionId == expectedTransactionID else {
            throw BenchError("verification \(number) returned another transaction")
        }
    }

    /// The CPU time (user and system) the calling thread has used.
    private static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
