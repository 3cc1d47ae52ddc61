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
        BenchCommand.warnIfBusy("rpcbench")
        let service = try ServiceProcess(executable: options.serverPath)
        defer { service.stop() }
        let redis = options.skipRedis ? nil : try RedisServer()
        defer { redis?.stop() }

        var rows: [ReportRow] = []
        var errors = CallFailures()
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

    /// Warms up, then measures one configuration through the service; adds failed calls to `errors`.
    private func measureRPC(
        _ configuration: Configuration, requests: Int, service: ServiceProcess, errors: inout CallFailures
    ) throws(BenchError) -> ReportRow {
        let generator = try LoadGenerator(
            port: service.port, clients: configuration.clients, pipeline: configuration.pipeline,
            method: options.method)
        var run = try generator.measure(requests: requests, serverPID: service.child.pid)
        errors.add(run)
        return ReportRow(
            clients: configuration.clients, pipeline: configuration.pipeline, requests: requests,
            rpcCallsPerSecond: run.callsPerSecond, rpcP50Milliseconds: run.milliseconds(percentile: 0.50),
            rpcP99Milliseconds: run.milliseconds(percentile: 0.99), serverCores: run.serverCores,
            generatorCores: run.generatorCores)
    }

    private static func progress(_ row: ReportRow) {
        var line = "clients \(row.clients) pipeline \(row.pipeline): rpc \(Int(row.rpcCallsPerSecond)) calls/s"
        if let redis = row.redis { line += ", redis \(Int(redis.opsPerSecond)) ops/s" }
        note(line)
    }

    static func note(_ text: String) { BenchCommand.note("rpcbench", text) }
}
