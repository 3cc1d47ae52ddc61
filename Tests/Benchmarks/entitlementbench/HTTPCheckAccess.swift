import BenchSupport
import Foundation

/// CheckAccess over HTTP (the Connect gateway, proto3 JSON, keep-alive) driven by `wrk` with
/// 50 connections on one thread, each call for a random sampled account and each answer checked
/// to say `"allowed":true` (by the script's `response`, so a wrong answer counts as failed). The
/// same script runs against the nginx reference (`NginxReference`), which answers every call
/// with a stored CheckAccess answer.
struct HTTPCheckAccess {
    struct Outcome {
        var callsPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        /// Answers that were not 200 with `"allowed":true`, and socket errors.
        var failed: Int
    }

    static let connections = 50

    let port: Int
    let accounts: [String]

    /// Runs `wrk` for `seconds` as fast as it can, or, with `callsPerSecond`, with each
    /// connection pausing between calls so that all of them make at most that many (wrk's
    /// `delay`, the time of a call aside); reads its figures. Throws when wrk is missing or
    /// prints no figures.
    func run(seconds: Int, directory: TemporaryDirectory, callsPerSecond: Double? = nil) throws(BenchError) -> Outcome {
        let pause = callsPerSecond.map { rate in
            "delay = function() return \(max(1, Int((Double(Self.connections) * 1000 / rate).rounded()))) end"
        }
        let ids = accounts.prefix(65_536).map { "\"\($0)\"" }.joined(separator: ",")
        let script = """
            local ids = {\(ids)}
            local bad = 0
            local n = 0
            wrk.method = "POST"
            wrk.headers["Content-Type"] = "application/json"
            request = function()
              n = n + 1
              local id = ids[(n * 40503) % #ids + 1]
              return wrk.format(nil, "/\(PurchaseWorkload.checkMethod)", nil,
                '{"accountId":"' .. id .. '","capability":"pro"}')
            end
            \(pause ?? "")
            response = function(status, headers, body)
              if status ~= 200 or not string.find(body, '"allowed":true', 1, true) then bad = bad + 1 end
            end
            done = function(summary, latency, requests)
              io.write(string.format("checkaccess-http bad %d\\n", bad))
              io.write(string.format("checkaccess-http p50 %f p99 %f\\n",
                latency:percentile(50) / 1000, latency:percentile(99) / 1000))
              io.write(string.format("checkaccess-http requests %d seconds %f errors %d\\n", summary.requests,
                summary.duration / 1e6, summary.errors.connect + summary.errors.read + summary.errors.write
                  + summary.errors.status + summary.errors.timeout))
            end
            """
        let path = try directory.write("checkaccess-\(port).lua", script)
        let (status, output) = try ChildProcess.runToCompletion(
            "wrk",
            [
                "-t1", "-c\(Self.connections)", "-d\(seconds)s", "-s", path,
                "http://127.0.0.1:\(port)/\(PurchaseWorkload.checkMethod)",
            ],
            limit: .seconds(Int64(seconds) + 30))
        guard status == 0 else { throw BenchError("wrk exited with \(status): \(output)") }
        func figures(_ prefix: String) -> [Double] {
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("checkaccess-http \(prefix) ") })
            else { return [] }
            return line.split(separator: " ").compactMap { Double($0) }
        }
        let (bad, latency, totals) = (figures("bad"), figures("p50"), figures("requests"))
        guard bad.count == 1, latency.count == 2, totals.count == 3, totals[1] > 0 else {
            throw BenchError("wrk printed no figures: \(output)")
        }
        // The script gives milliseconds; failed is the answers it refused plus wrk's socket errors.
        return Outcome(
            callsPerSecond: totals[0] / totals[1], p50Milliseconds: latency[0], p99Milliseconds: latency[1],
            failed: Int(bad[0] + totals[2]))
    }
}
