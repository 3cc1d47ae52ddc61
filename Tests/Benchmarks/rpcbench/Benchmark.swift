import BenchSupport
import Foundation

/// One run of the whole comparison: starts the service and redis-server, measures every
/// configuration with the load generator and with redis-benchmark, stops both, and reports.
struct Benchmark {
    /// One load shape and the request count that makes it take roughly 2–4 s on a 2-core machine
    /// (for both this generator and redis-benchmark).
    struct Configuration {
        let clients: Int
        let pipeline: Int
        let requests: Int
    }

    static let configurations = [
        Configuration(clients: 1, pipeline: 1, requests: 50_000),
        Configuration(clients: 1, pipeline: 16, requests: 750_000),
        Configuration(clients: 50, pipeline: 1, requests: 300_000),
        Configuration(clients: 50, pipeline: 16, requests: 3_500_000),
    ]
    static let targetRatio = 0.6

    let options: BenchOptions

    /// Runs everything and prints the table and, last, the JSON line. Throws when a process
    /// cannot be started or a measurement breaks; the children are stopped either way.
    /// Returns the number of calls that failed (replies with a status).
    func run() throws(BenchError) -> Int {
        Self.warnIfBusy()
        let service = try ServiceProcess(executable: options.serverPath)
        defer { service.stop() }
        let redis = options.skipRedis ? nil : try RedisServer()
        defer { redis?.stop() }

        var rows: [ReportRow] = []
        var errors = Errors()
        for configuration in Self.configurations {
            let requests = max(
                configuration.clients * configuration.pipeline,
                Int((Double(configuration.requests) * options.requestsScale).rounded()))
            var row: ReportRow
            do {
                row = try measureRPC(configuration, requests: requests, service: service, errors: &errors)
            } catch {
                // A connection the server closed usually means the server died; say so.
                guard service.child.waitForExit(within: .milliseconds(500)) else { throw error }
                throw BenchError("\(error); \(options.serverPath) has exited (its log is above)")
            }
            if let redis {
                row.redis = try RedisBenchmark.run(
                    port: redis.port, clients: configuration.clients, pipeline: configuration.pipeline,
                    requests: requests)
            }
            Self.progress(row)
            rows.append(row)
        }

        redis?.stop()
        let status = service.stop()
        if status != 0 {
            Self.note(
                "\(options.serverPath) did not exit cleanly on SIGTERM (\(status.map { "status \($0)" } ?? "killed by a signal"))"
            )
        }
        if let first = errors.first { Self.note("\(errors.count) calls failed; the first: \(first)") }
        let report = Report(rows: rows, targetRatio: Self.targetRatio, errors: errors.count)
        print(report.table)
        print(report.json)
        return errors.count
    }

    /// Failed calls (replies with a status) over the whole run.
    struct Errors {
        var count = 0
        var first: String?
    }

    /// Warms up, then measures one configuration through the service; adds failed calls to `errors`.
    private func measureRPC(
        _ configuration: Configuration, requests: Int, service: ServiceProcess, errors: inout Errors
    ) throws(BenchError) -> ReportRow {
        let generator = try LoadGenerator(
            port: service.port, clients: configuration.clients, pipeline: configuration.pipeline,
            method: options.method)
        let warmUp = try generator.run(requests: max(requests / 10, configuration.clients * configuration.pipeline))
        let serverBefore = ProcessCPU.seconds(pid: service.child.pid)
        let generatorBefore = ProcessCPU.seconds()
        var outcome = try generator.run(requests: requests)
        let serverAfter = ProcessCPU.seconds(pid: service.child.pid)
        let generatorAfter = ProcessCPU.seconds()
        errors.count += warmUp.failed + outcome.failed
        errors.first = errors.first ?? warmUp.firstFailure ?? outcome.firstFailure
        func cores(_ before: Double?, _ after: Double?) -> Double? {
            guard let before, let after else { return nil }
            return (after - before) / outcome.seconds
        }
        return ReportRow(
            clients: configuration.clients, pipeline: configuration.pipeline, requests: requests,
            rpcCallsPerSecond: Double(outcome.succeeded) / outcome.seconds,
            rpcP50Milliseconds: outcome.latencies.milliseconds(percentile: 0.50),
            rpcP99Milliseconds: outcome.latencies.milliseconds(percentile: 0.99),
            serverCores: cores(serverBefore, serverAfter), generatorCores: cores(generatorBefore, generatorAfter))
    }

    /// Other work on the machine moves every figure here (both sides share its cores), so say so.
    private static func warnIfBusy() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
            let load = text.split(separator: " ").first.flatMap({ Double($0) }), load > 0.5 * Double(cores)
        else { return }
        note("load average \(load) on \(cores) cores before starting: other work will skew the figures")
    }

    private static func progress(_ row: ReportRow) {
        var line = "clients \(row.clients) pipeline \(row.pipeline): rpc \(Int(row.rpcCallsPerSecond)) calls/s"
        if let redis = row.redis { line += ", redis \(Int(redis.opsPerSecond)) ops/s" }
        note(line)
    }

    static func note(_ text: String) {
        FileHandle.standardError.write(Data("rpcbench: \(text)\n".utf8))
    }
}
