import Foundation

/// One run of the whole comparison: starts the service and redis-server, measures every
/// configuration with the load generator and with redis-benchmark, stops both, and reports.
struct Benchmark {
    /// One load shape and the request count that makes it take roughly 2–4 s here.
    struct Configuration {
        let clients: Int
        let pipeline: Int
        let requests: Int
    }

    static let configurations = [
        Configuration(clients: 1, pipeline: 1, requests: 100_000),
        Configuration(clients: 1, pipeline: 16, requests: 500_000),
        Configuration(clients: 50, pipeline: 1, requests: 300_000),
        Configuration(clients: 50, pipeline: 16, requests: 1_000_000),
    ]
    static let targetRatio = 0.6

    let options: BenchOptions

    /// Runs everything and prints the table and, last, the JSON line. Throws when a process
    /// cannot be started or a measurement breaks; the children are stopped either way.
    /// Returns the number of calls that failed (replies with a status).
    func run() throws(BenchError) -> Int {
        let service = try ServiceProcess(executable: options.serverPath)
        defer { service.stop() }
        let redis = options.skipRedis ? nil : try RedisServer()
        defer { redis?.stop() }

        var rows: [ReportRow] = []
        var errors = 0
        var firstFailure: String?
        for configuration in Self.configurations {
            let requests = max(
                configuration.clients * configuration.pipeline,
                Int((Double(configuration.requests) * options.requestsScale).rounded()))
            let generator = try LoadGenerator(
                port: service.port, clients: configuration.clients, pipeline: configuration.pipeline,
                method: options.method)
            let warmUp = try generator.run(requests: max(requests / 10, configuration.clients * configuration.pipeline))
            let serverBefore = ProcessCPU.seconds(pid: service.child.pid)
            let generatorBefore = ProcessCPU.seconds()
            var outcome = try generator.run(requests: requests)
            let serverCores = ProcessCPU.seconds(pid: service.child.pid).flatMap { after in
                serverBefore.map { (after - $0) / outcome.seconds }
            }
            let generatorCores = ProcessCPU.seconds().flatMap { after in
                generatorBefore.map { (after - $0) / outcome.seconds }
            }
            errors += warmUp.failed + outcome.failed
            firstFailure = firstFailure ?? warmUp.firstFailure ?? outcome.firstFailure
            var row = ReportRow(
                clients: configuration.clients, pipeline: configuration.pipeline, requests: requests,
                rpcCallsPerSecond: Double(outcome.succeeded) / outcome.seconds,
                rpcP50Milliseconds: outcome.latencies.milliseconds(percentile: 0.50),
                rpcP99Milliseconds: outcome.latencies.milliseconds(percentile: 0.99),
                serverCores: serverCores, generatorCores: generatorCores)
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
            Self.note("\(options.serverPath) did not exit cleanly on SIGTERM (\(status.map { "status \($0)" } ?? "killed by a signal"))")
        }
        if let firstFailure { Self.note("\(errors) calls failed; the first: \(firstFailure)") }
        let report = Report(rows: rows, targetRatio: Self.targetRatio, errors: errors)
        print(report.table)
        print(report.json)
        return errors
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
