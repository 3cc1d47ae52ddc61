import Glibc

/// One configuration measured through a load generator: a warm-up of a tenth as many requests
/// (at least one batch per connection), then the timed run, with the CPU the service and the
/// generator used during it.
public struct MeasuredRun {
    public let warmUp: LoadGenerator.Outcome
    public var outcome: LoadGenerator.Outcome
    /// Cores the service and the generator kept busy during the timed run; nil when unreadable.
    public let serverCores: Double?
    public let generatorCores: Double?

    public var callsPerSecond: Double { Double(outcome.succeeded) / outcome.seconds }
    public mutating func milliseconds(percentile: Double) -> Double {
        outcome.latencies.milliseconds(percentile: percentile)
    }
}

extension LoadGenerator {
    /// Warms up, then runs `requests` with the CPU of the service `serverPID` and of this
    /// process measured around the timed run.
    public func measure(requests: Int, serverPID: Int32) throws(BenchError) -> MeasuredRun {
        let warmUp = try run(requests: max(requests / 10, clients * pipeline))
        let serverBefore = ProcessCPU.seconds(pid: serverPID)
        let generatorBefore = ProcessCPU.seconds()
        let outcome = try run(requests: requests)
        let serverAfter = ProcessCPU.seconds(pid: serverPID)
        let generatorAfter = ProcessCPU.seconds()
        func cores(_ before: Double?, _ after: Double?) -> Double? {
            guard let before, let after else { return nil }
            return (after - before) / outcome.seconds
        }
        return MeasuredRun(
            warmUp: warmUp, outcome: outcome, serverCores: cores(serverBefore, serverAfter),
            generatorCores: cores(generatorBefore, generatorAfter))
    }
}

/// Failed calls (replies with a status) over a whole benchmark, and the first one's text.
public struct CallFailures {
    public private(set) var count = 0
    public private(set) var first: String?

    public init() {}

    /// Counts the failures of a measured run, warm-up included.
    public mutating func add(_ run: MeasuredRun) {
        count += run.warmUp.failed + run.outcome.failed
        first = first ?? run.warmUp.firstFailure ?? run.outcome.firstFailure
    }
}
