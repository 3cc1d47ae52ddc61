import CShims
import Foundation
import Glibc
import Observability
import Synchronization
import Wire

/// Per-method call counts by status and latency histograms, kept per event loop so recording
/// never contends across threads; merged when `/metrics` is rendered.
final class RPCServerMetrics: Sendable {
    struct LoopStats {
        /// [method index][status code] → count; the last method slot counts unknown methods.
        var calls: [[UInt64]]
        var latency: [LatencyHistogram]
        var framesRejected: [String: UInt64] = [:]
    }

    let methodNames: [String]
    private let loops: [LockedStats]
    let connections = Atomic<Int>(0)
    let connectionsAccepted = Atomic<Int>(0)
    let connectionsRefused = Atomic<Int>(0)
    let connectionsEvicted = Atomic<Int>(0)

    init(methodNames: [String], loopCount: Int) {
        self.methodNames = methodNames + ["unknown"]
        let slots = methodNames.count + 1
        loops = (0..<loopCount).map { _ in
            LockedStats(
                LoopStats(
                    calls: Array(repeating: Array(repeating: 0, count: 17), count: slots),
                    latency: Array(repeating: LatencyHistogram(), count: slots)))
        }
    }

    var unknownMethodIndex: Int { methodNames.count - 1 }

    func record(loop: Int, method: Int, code: StatusCode, nanoseconds: UInt64) {
        loops[loop].mutex.withLock { stats in
            let slot = code.rawValue >= 0 && code.rawValue < 17 ? Int(code.rawValue) : 2
            stats.calls[method][slot] += 1
            stats.latency[method].record(nanoseconds: nanoseconds)
        }
    }

    /// Records `counts[method]` successful calls of each method that took `nanoseconds` each.
    func recordSuccesses(loop: Int, counts: [UInt64], nanoseconds: UInt64) {
        loops[loop].mutex.withLock { stats in
            for (method, count) in counts.enumerated() where count > 0 {
                stats.calls[method][Int(StatusCode.ok.rawValue)] += count
                stats.latency[method].record(nanoseconds: nanoseconds, times: count)
            }
        }
    }

    func frameRejected(loop: Int, reason: String) {
        loops[loop].mutex.withLock { $0.framesRejected[reason, default: 0] += 1 }
    }

    /// Writes the families into a metrics page.
    func write(into text: inout MetricsText) {
        var calls = Array(repeating: Array(repeating: UInt64(0), count: 17), count: methodNames.count)
        var latency = Array(repeating: LatencyHistogram(), count: methodNames.count)
        var rejected: [String: UInt64] = [:]
        for loop in loops {
            loop.mutex.withLock { stats in
                for m in 0..<methodNames.count {
                    for c in 0..<17 { calls[m][c] += stats.calls[m][c] }
                    latency[m].merge(stats.latency[m])
                }
                rejected.merge(stats.framesRejected, uniquingKeysWith: +)
            }
        }
        text.family("rpc_server_calls_total", type: "counter", help: "Calls answered, by method and status code.")
        for m in 0..<methodNames.count {
            for c in 0..<17 where calls[m][c] > 0 {
                text.sample(
                    "rpc_server_calls_total", ["method": methodNames[m], "code": StatusCode(rawValue: Int32(c)).name],
                    Double(calls[m][c]))
            }
        }
        text.family(
            "rpc_server_call_duration_seconds", type: "histogram",
            help:
                "Time from reading a request to queuing its reply (in-memory calls of one read are timed together, to the end of handling that read)."
        )
        for m in 0..<methodNames.count where latency[m].count > 0 {
            text.histogram("rpc_server_call_duration_seconds", ["method": methodNames[m]], latency[m])
        }
        text.family("rpc_server_connections", type: "gauge", help: "Open connections.")
        text.sample("rpc_server_connections", [:], Double(connections.load(ordering: .relaxed)))
        text.family("rpc_server_connections_accepted_total", type: "counter", help: "Connections accepted.")
        text.sample("rpc_server_connections_accepted_total", [:], Double(connectionsAccepted.load(ordering: .relaxed)))
        text.family(
            "rpc_server_connections_refused_total", type: "counter",
            help: "Connections refused at accept (draining, the per-address limit, or the cap with none to close).")
        text.sample("rpc_server_connections_refused_total", [:], Double(connectionsRefused.load(ordering: .relaxed)))
        text.family(
            "rpc_server_connections_evicted_total", type: "counter",
            help: "Connections with no call in flight closed to admit a new one at the connection limit.")
        text.sample("rpc_server_connections_evicted_total", [:], Double(connectionsEvicted.load(ordering: .relaxed)))
        text.family(
            "rpc_server_frames_rejected_total", type: "counter",
            help:
                "Frames or connections rejected, by reason (too_long, empty, refused, malformed, read_timeout, first_frame_timeout, tls)."
        )
        for reason in rejected.keys.sorted() {
            text.sample("rpc_server_frames_rejected_total", ["reason": reason], Double(rejected[reason]!))
        }
    }
}

/// One loop's statistics behind a lock only scrapes contend for.
final class LockedStats: Sendable {
    let mutex: Mutex<RPCServerMetrics.LoopStats>
    init(_ stats: RPCServerMetrics.LoopStats) { mutex = Mutex(stats) }
}
