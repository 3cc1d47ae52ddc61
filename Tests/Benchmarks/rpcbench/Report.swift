import BenchSupport
import Foundation

/// One configuration's figures: ours, redis-benchmark's (nil with --skip-redis), and CPU use.
struct ReportRow {
    var clients: Int
    var pipeline: Int
    var requests: Int
    var rpcCallsPerSecond: Double
    var rpcP50Milliseconds: Double
    var rpcP99Milliseconds: Double
    /// CPU cores the server and the load generator kept busy during the measured phase.
    var serverCores: Double?
    var generatorCores: Double?
    var redis: RedisBenchmark?

    /// rpc calls/s ÷ redis ops/s, rounded to two decimals (the value shown and judged).
    var ratio: Double? {
        redis.map { $0.opsPerSecond > 0 ? (rpcCallsPerSecond / $0.opsPerSecond * 100).rounded() / 100 : 0 }
    }
}

/// The human table and the machine-readable JSON line of a run.
struct Report {
    let rows: [ReportRow]
    let targetRatio: Double
    let errors: Int

    var minRatio: Double? { rows.compactMap(\.ratio).min() }

    /// Right-aligned columns, one row per configuration; without redis figures their columns are left out.
    var table: String {
        let withRedis = rows.contains { $0.redis != nil }
        var header = ["clients", "pipeline", "rpc calls/s", "rpc p50 ms", "rpc p99 ms"]
        if withRedis {
            header += ["redis ops/s", "redis p50 ms", "redis p99 ms", "ratio", "verdict (target \(targetRatio)x)"]
        }
        header += ["server cpu", "client cpu"]
        var lines = [header]
        for row in rows {
            var cells = [
                "\(row.clients)", "\(row.pipeline)", ReportText.grouped(row.rpcCallsPerSecond),
                ReportText.fixed(row.rpcP50Milliseconds, 3), ReportText.fixed(row.rpcP99Milliseconds, 3),
            ]
            if withRedis {
                if let redis = row.redis, let ratio = row.ratio {
                    cells += [
                        ReportText.grouped(redis.opsPerSecond), ReportText.fixed(redis.p50Milliseconds, 3),
                        ReportText.fixed(redis.p99Milliseconds, 3), ReportText.fixed(ratio, 2),
                        ratio >= targetRatio ? "meets target" : "below target",
                    ]
                } else {
                    cells += Array(repeating: "-", count: 5)
                }
            }
            cells += [row.serverCores, row.generatorCores].map { $0.map { ReportText.fixed($0, 2) } ?? "-" }
            lines.append(cells)
        }
        return ReportText.table(lines)
    }

    /// One JSON object with every figure; numbers only, keys in a fixed order.
    var json: String {
        let results = rows.map { row in
            var fields = [
                ("clients", "\(row.clients)"), ("pipeline", "\(row.pipeline)"), ("requests", "\(row.requests)"),
                ("rpc_calls_per_s", ReportText.fixed(row.rpcCallsPerSecond, 0)),
                ("rpc_p50_ms", ReportText.fixed(row.rpcP50Milliseconds, 3)),
                ("rpc_p99_ms", ReportText.fixed(row.rpcP99Milliseconds, 3)),
            ]
            if let redis = row.redis, let ratio = row.ratio {
                fields += [
                    ("redis_ops_per_s", ReportText.fixed(redis.opsPerSecond, 0)),
                    ("redis_p50_ms", ReportText.fixed(redis.p50Milliseconds, 3)),
                    ("redis_p99_ms", ReportText.fixed(redis.p99Milliseconds, 3)),
                    ("ratio", ReportText.fixed(ratio, 2)),
                ]
            }
            fields += [
                ("server_cpu_cores", row.serverCores.map { ReportText.fixed($0, 2) } ?? "null"),
                ("client_cpu_cores", row.generatorCores.map { ReportText.fixed($0, 2) } ?? "null"),
            ]
            return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        }
        let minimum = minRatio.map { ReportText.fixed($0, 2) } ?? "null"
        return "{\"benchmark\":\"rpc\",\"target_ratio\":\(targetRatio),\"results\":[\(results.joined(separator: ","))],"
            + "\"min_ratio\":\(minimum),\"errors\":\(errors)}"
    }

}
