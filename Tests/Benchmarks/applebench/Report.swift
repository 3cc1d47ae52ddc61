import BenchSupport

/// One measured figure beside the reference it is judged against (when it is judged).
struct ReportRow {
    var figure: String
    /// The key prefix in the JSON line.
    var key: String
    var ours: VerifyLoad.Result
    /// Whether the figure is per CPU-second of the measuring thread (as `openssl speed` counts)
    /// rather than per wall-clock second (the throughput of all threads together).
    var perCPUSecond: Bool
    var reference: Double
    var referenceName: String
    /// The least ratio that meets the target; nil for a figure reported but not judged.
    var target: Double?

    /// Verifications per second, by the row's clock.
    var perSecond: Double { perCPUSecond ? ours.perCPUSecond : ours.perWallSecond }

    /// ours ÷ reference, rounded to two decimals (the value shown and judged).
    var ratio: Double { reference > 0 ? (perSecond / reference * 100).rounded() / 100 : 0 }
    var meetsTarget: Bool { target.map { ratio >= $0 } ?? true }
}

/// The human table and the machine-readable JSON line of a run.
struct Report {
    let rows: [ReportRow]
    let speed: OpenSSLSpeed
    let seconds: Double
    let payloadBytes: Int
    let jwsBytes: Int

    var allMeetTarget: Bool { rows.allSatisfy(\.meetsTarget) }

    /// Right-aligned columns, one row per figure.
    var table: String {
        var lines = [
            ["figure", "ours/s", "per", "cpu share", "reference", "reference/s", "ratio", "target", "verdict"]
        ]
        for row in rows {
            let verdict: String
            if let target = row.target {
                verdict = row.ratio >= target ? "meets target" : "below target"
            } else {
                verdict = "(not judged)"
            }
            lines.append([
                row.figure, ReportText.grouped(row.perSecond), row.perCPUSecond ? "cpu s" : "wall s",
                ReportText.fixed(row.ours.cpuShare, 2), row.referenceName,
                ReportText.grouped(row.reference), ReportText.fixed(row.ratio, 2),
                row.target.map { "≥ \(ReportText.fixed($0, 2))" } ?? "-", verdict,
            ])
        }
        return ReportText.table(lines)
    }

    /// One JSON object with every figure; keys in a fixed order.
    var json: String {
        var fields: [(String, String)] = [
            ("benchmark", "\"apple\""), ("seconds", ReportText.fixed(seconds, 1)),
            ("payload_bytes", "\(payloadBytes)"), ("jws_bytes", "\(jwsBytes)"),
            ("openssl_version", "\"\(speed.version.filter { $0 != "\"" && $0 != "\\" })\""),
            ("openssl_p256_sign_per_s", ReportText.fixed(speed.p256.signPerSecond, 1)),
            ("openssl_p256_verify_per_s", ReportText.fixed(speed.p256.verifyPerSecond, 1)),
            ("openssl_p384_sign_per_s", ReportText.fixed(speed.p384.signPerSecond, 1)),
            ("openssl_p384_verify_per_s", ReportText.fixed(speed.p384.verifyPerSecond, 1)),
        ]
        for row in rows {
            fields += [
                ("\(row.key)_threads", "\(row.ours.threads)"),
                ("\(row.key)_verifications", "\(row.ours.verifications)"),
                ("\(row.key)_per_s", ReportText.fixed(row.perSecond, 1)),
                ("\(row.key)_per", row.perCPUSecond ? "\"cpu_second\"" : "\"wall_second\""),
                ("\(row.key)_per_cpu_s", ReportText.fixed(row.ours.perCPUSecond, 1)),
                ("\(row.key)_per_wall_s", ReportText.fixed(row.ours.perWallSecond, 1)),
                ("\(row.key)_cpu_share", ReportText.fixed(row.ours.cpuShare, 3)),
                ("\(row.key)_ratio", ReportText.fixed(row.ratio, 2)),
            ]
            if let target = row.target {
                fields += [
                    ("\(row.key)_target", ReportText.fixed(target, 2)),
                    ("\(row.key)_meets_target", "\(row.ratio >= target)"),
                ]
            }
        }
        fields += [("all_meet_target", "\(allMeetTarget)"), ("errors", "0")]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
}
