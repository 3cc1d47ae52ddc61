import BenchSupport
import Glibc

/// CheckAccess over HTTP beside nginx serving the same answer as a static file: the same `wrk`
/// script, connections and duration against both, then the service again at half the rate it
/// reached, for its latency below saturation. Targets: at least `targetRatio` of nginx's rate,
/// and a p99 under `halfRateP99Target` ms at half rate.
struct HTTPComparison {
    static let targetRatio = 0.5
    static let halfRateP99Target = 5.0

    /// The service flat out.
    let ours: HTTPCheckAccess.Outcome
    /// nginx flat out.
    let nginx: HTTPCheckAccess.Outcome
    /// The service with wrk held to half of `ours.callsPerSecond`.
    let halfRate: HTTPCheckAccess.Outcome
    /// The size of the answer nginx served, a CheckAccess answer's.
    let answerBytes: Int

    var ratio: Double { nginx.callsPerSecond > 0 ? ours.callsPerSecond / nginx.callsPerSecond : 0 }
    var meetsTarget: Bool { ratio >= Self.targetRatio && halfRate.p99Milliseconds < Self.halfRateP99Target }
    var failed: Int { ours.failed + nginx.failed + halfRate.failed }

    /// Fetches one CheckAccess answer from the service at `port` (as curl gets it), starts nginx
    /// serving those bytes, and runs the three loads of `seconds` each.
    static func run(port: Int, accounts: [String], seconds: Int, directory: TemporaryDirectory)
        throws(BenchError) -> HTTPComparison
    {
        guard let account = accounts.first else { throw BenchError("no sampled account to call") }
        let (status, answer) = try ChildProcess.runToCompletion(
            "curl",
            [
                "-sf", "-X", "POST", "-H", "Content-Type: application/json", "--data",
                #"{"accountId":"\#(account)","capability":"pro"}"#,
                "http://127.0.0.1:\(port)/\(PurchaseWorkload.checkMethod)",
            ], limit: .seconds(10), separateStandardError: true)
        guard status == 0, answer.contains(#""allowed":true"#) else {
            throw BenchError("CheckAccess over HTTP answered \(status): \(answer.prefix(200))")
        }
        let nginx = try NginxReference(serving: Array(answer.utf8), in: directory)
        defer { nginx.stop() }
        let service = HTTPCheckAccess(port: port, accounts: accounts)
        let ours = try service.run(seconds: seconds, directory: directory)
        let reference = try HTTPCheckAccess(port: nginx.port, accounts: accounts).run(
            seconds: seconds, directory: directory)
        nginx.stop()
        let halfRate = try service.run(
            seconds: seconds, directory: directory, callsPerSecond: max(1, ours.callsPerSecond / 2))
        return HTTPComparison(ours: ours, nginx: reference, halfRate: halfRate, answerBytes: answer.utf8.count)
    }

    /// Table rows: figure, ours, reference, ratio, target, verdict.
    var lines: [[String]] {
        [
            [
                "CheckAccess/s over HTTP (JSON, keep-alive, \(HTTPCheckAccess.connections) connections) vs nginx "
                    + "static \(answerBytes) bytes",
                ReportText.grouped(ours.callsPerSecond), ReportText.grouped(nginx.callsPerSecond),
                ReportText.fixed(ratio, 2), "≥ \(Self.targetRatio)×",
                ratio >= Self.targetRatio ? "meets target" : "misses target",
            ],
            [
                "  p50 ms", ReportText.fixed(ours.p50Milliseconds, 3), ReportText.fixed(nginx.p50Milliseconds, 3), "",
                "", "",
            ],
            [
                "  p99 ms", ReportText.fixed(ours.p99Milliseconds, 3), ReportText.fixed(nginx.p99Milliseconds, 3), "",
                "", "",
            ],
            [
                "  at half rate (\(ReportText.grouped(halfRate.callsPerSecond))/s): p50 ms",
                ReportText.fixed(halfRate.p50Milliseconds, 3), "", "", "", "",
            ],
            [
                "  at half rate: p99 ms", ReportText.fixed(halfRate.p99Milliseconds, 3), "", "",
                "< \(Int(Self.halfRateP99Target)) ms",
                halfRate.p99Milliseconds < Self.halfRateP99Target ? "meets target" : "misses target",
            ],
        ]
    }

    /// JSON fields (name, value), in a fixed order.
    var fields: [(String, String)] {
        [
            ("http_calls_per_s", ReportText.fixed(ours.callsPerSecond, 0)),
            ("http_p50_ms", ReportText.fixed(ours.p50Milliseconds, 3)),
            ("http_p99_ms", ReportText.fixed(ours.p99Milliseconds, 3)),
            ("http_failed", "\(failed)"),
            ("http_nginx_calls_per_s", ReportText.fixed(nginx.callsPerSecond, 0)),
            ("http_nginx_p50_ms", ReportText.fixed(nginx.p50Milliseconds, 3)),
            ("http_nginx_p99_ms", ReportText.fixed(nginx.p99Milliseconds, 3)),
            ("http_vs_nginx_ratio", ReportText.fixed(ratio, 2)),
            ("http_half_rate_calls_per_s", ReportText.fixed(halfRate.callsPerSecond, 0)),
            ("http_half_rate_p50_ms", ReportText.fixed(halfRate.p50Milliseconds, 3)),
            ("http_half_rate_p99_ms", ReportText.fixed(halfRate.p99Milliseconds, 3)),
            ("http_meets_target", "\(meetsTarget)"),
        ]
    }
}
