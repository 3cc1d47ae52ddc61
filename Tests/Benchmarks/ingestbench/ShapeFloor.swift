import BenchSupport
import Foundation
import Glibc

/// What one exchange between two processes on loopback costs on this machine at its reference
/// tool's speed, measured in the same run: a framed request and its answer, CPU of both ends
/// (redis-benchmark's unpipelined GET against redis-server, 16 clients: both ends of a framed
/// call between two of the services are ours), and an HTTP/1.1 keep-alive POST and its answer,
/// each end apart (wrk posting a webhook-sized body to nginx, 16 connections: a service is the
/// server of a store's notification and the client of a store API call and of a webhook).
///
/// A notification crosses processes however fast each one is: the three services are separate
/// executables, and the stores and the webhook receiver are outside. `ShapeFloor` adds the
/// fewest exchanges that shape needs to the floor of verifies and an append.
struct ExchangeCosts {
    /// CPU seconds of one framed exchange, both ends.
    var framedSeconds: Double
    /// CPU seconds of the server's end of one HTTP exchange (nginx).
    var httpServerSeconds: Double
    /// CPU seconds of the client's end of one HTTP exchange (wrk).
    var httpClientSeconds: Double

    static func measure(directory: TemporaryDirectory, seconds: Int) throws(BenchError) -> ExchangeCosts {
        let (server, client) = try http(directory: directory, seconds: seconds)
        return ExchangeCosts(framedSeconds: try framed(), httpServerSeconds: server, httpClientSeconds: client)
    }

    /// CPU seconds this process's reaped children have used so far.
    private static func childrenCPU() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    private static func framed() throws(BenchError) -> Double {
        let redis = try RedisServer()
        defer { redis.stop() }
        let requests = 200_000
        let (server, client) = (ProcessCPU.seconds(pid: redis.child.pid) ?? 0, childrenCPU())
        _ = try RedisBenchmark.run(port: redis.port, clients: 16, pipeline: 1, requests: requests)
        let spent = (ProcessCPU.seconds(pid: redis.child.pid) ?? 0) - server + childrenCPU() - client
        return spent / Double(requests)
    }

    private static func http(directory: TemporaryDirectory, seconds: Int) throws(BenchError) -> (Double, Double) {
        // About a webhook's size: a subscription.renewed event with its subscription.
        let body = #"{"status":"ok"}"#
        let nginx = try NginxReference(serving: Array(body.utf8), in: directory)
        defer { nginx.stop() }
        let padding = String(repeating: "x", count: 1200)
        let script = try directory.write(
            "exchange.lua",
            """
            wrk.method = "POST"
            wrk.headers["Content-Type"] = "application/json"
            wrk.body = '{"pad":"\(padding)"}'
            done = function(summary, latency, requests)
              io.write(string.format("exchanges %d\\n", summary.requests))
            end
            """)
        let (server, client) = (nginx.cpuSeconds(), childrenCPU())
        let (status, output) = try ChildProcess.runToCompletion(
            "wrk", ["-t1", "-c16", "-d\(seconds)s", "-s", script, "http://127.0.0.1:\(nginx.port)/"],
            limit: .seconds(Int64(seconds) + 30))
        let (served, posted) = (nginx.cpuSeconds() - server, childrenCPU() - client)
        guard status == 0,
            let line = output.split(separator: "\n").first(where: { $0.hasPrefix("exchanges ") }),
            let requests = Double(line.split(separator: " ")[1]), requests > 0
        else { throw BenchError("wrk printed no figures: \(output.suffix(500))") }
        return (served / requests, posted / requests)
    }
}

/// The floor of the shape: a store's floor (verifies and one append) plus the fewest exchanges
/// one notification makes on its way, each at its reference tool's cost: the server's end of
/// the store's HTTP delivery; two framed exchanges (the write to the ledger, the change fed to
/// the entitlement service); the client's end of the webhook's POST, and for Google Play of the
/// `subscriptionsv2.get` as well (an RTDN carries no state). However fast each process is, the
/// three services spend at least this on a notification, so floor / shape floor is the highest
/// floor / ours (service CPU) this shape allows.
struct ShapeFloor {
    var framed = 2
    var httpServed = 1
    var httpPosted: Int
    var seconds: Double

    init(floor: Double, store: String, costs: ExchangeCosts) {
        httpPosted = store == "google" ? 2 : 1
        seconds =
            floor + Double(framed) * costs.framedSeconds + Double(httpServed) * costs.httpServerSeconds
            + Double(httpPosted) * costs.httpClientSeconds
    }
}
