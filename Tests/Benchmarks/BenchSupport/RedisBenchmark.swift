import Foundation

/// redis-benchmark's GET test against a local redis-server, and the figures of its CSV.
public struct RedisBenchmark {
    public var opsPerSecond: Double
    public var p50Milliseconds: Double
    public var p99Milliseconds: Double

    /// Runs `redis-benchmark -t get` with the given clients, pipeline depth and request count.
    /// Throws when it fails, takes longer than `limit`, or prints no GET row.
    public static func run(port: Int, clients: Int, pipeline: Int, requests: Int, limit: Duration = .seconds(180))
        throws(BenchError) -> RedisBenchmark
    {
        let arguments = [
            "-h", "127.0.0.1", "-p", "\(port)", "-t", "get", "-c", "\(clients)", "-P", "\(pipeline)", "-n",
            "\(requests)", "--csv",
        ]
        let result = try ChildProcess.runToCompletion("redis-benchmark", arguments, limit: limit)
        guard result.status == 0, let figures = parse(csv: result.output) else {
            throw BenchError(
                "redis-benchmark \(arguments.joined(separator: " ")) exited \(result.status):\n\(result.output.suffix(2000))"
            )
        }
        return figures
    }

    /// Reads the "GET" row by the header's column names (Redis 7: "test","rps",
    /// "avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",…).
    public static func parse(csv: String) -> RedisBenchmark? {
        func cells(_ line: Substring) -> [String] {
            line.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" \r"))
            }
        }
        let lines = csv.split(whereSeparator: \.isNewline)
        guard let header = lines.first(where: { $0.contains("\"rps\"") }).map(cells),
            let row = lines.first(where: { $0.hasPrefix("\"GET\"") }).map(cells), row.count == header.count
        else { return nil }
        func value(_ column: String) -> Double? { header.firstIndex(of: column).flatMap { Double(row[$0]) } }
        guard let rps = value("rps"), let p50 = value("p50_latency_ms"), let p99 = value("p99_latency_ms") else {
            return nil
        }
        return RedisBenchmark(opsPerSecond: rps, p50Milliseconds: p50, p99Milliseconds: p99)
    }
}
