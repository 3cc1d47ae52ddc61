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
    /// For a figure measured in rounds: each round's ours ÷ reference (the ratio is their median).
    var roundRatios: [Double] = []

    /// A figure measured once, beside a reference measured once.
    init(
        figure: String, key: String, ours: VerifyLoad.Result, perCPUSecond: Bool, reference: Double,
        referenceName: String, target: Double?
    ) {
        self.figure = figure
        self.key = key
        self.ours = ours
        self.perCPUSecond = perCPUSecond
        self.reference = reference
        self.referenceName = referenceName
        self.target = target
    }

    /// A one-thread figure (per CPU-second) measured in rounds, each beside the reference's
    /// rate of the same round: ours and the reference shown are the rounds' medians, the ratio
    /// is the median of the rounds' ratios.
    init(
        figure: String, key: String, rounds: [VerifyLoad.Result], references: [Double], referenceName: String,
        target: Double?
    ) {
        precondition(!rounds.isEmpty && rounds.count == references.count, "one reference per round")
        let byRate = rounds.sorted { $0.perCPUSecond < $1.perCPUSecond }
        self.init(
            figure: figure, key: key, ours: byRate[byRate.count / 2], perCPUSecond: true,
            reference: ReportText.median(references), referenceName: referenceName, target: target)
        ours.perCPUSecond = ReportText.median(rounds.map(\.perCPUSecond))
        ours.verifications = rounds.map(\.verifications).reduce(0, +)
        roundRatios = zip(rounds, references).map { $1 > 0 ? $0.perCPUSecond / $1 : 0 }
    }

    /// Verifications per second, by the row's clock.
    var perSecond: Double { perCPUSecond ? ours.perCPUSecond : ours.perWallSecond }

    /// ours ÷ reference (the median of the rounds' ratios, for a figure measured in rounds),
    /// rounded to two decimals (the value shown and judged).
    var ratio: Double {
        let exact = roundRatios.isEmpty ? (reference > 0 ? perSecond / reference : 0) : ReportText.median(roundRatios)
        return (exact * 100).rounded() / 100
    }
    var meetsTarget: Bool { target.map { ratio >= $0 } ?? true }

    /// The rounds' lowest and highest ratio, as the table shows them.
    var spread: String { ReportText.range(roundRatios) }
}

/// The human table and the machine-readable JSON line of a run.
struct Report {
    let rows: [ReportRow]
    let speed: OpenSSLSpeed
    let seconds: Double
    let rounds: Int
    let payloadBytes: Int
    let jwsBytes: Int

    var allMeetTarget: Bool { rows.allSatisfy(\.meetsTarget) }

    /// Right-aligned columns, one row per figure.
    var table: String {
        var lines = [
            [
                "figure", "ours/s", "per", "cpu share", "reference", "reference/s", "ratio", "rounds", "target",
                "verdict",
            ]
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
                ReportText.grouped(row.reference), ReportText.fixed(row.ratio, 2), row.spread,
                row.target.map { "≥ \(ReportText.fixed($0, 2))" } ?? "-", verdict,
            ])
        }
        return ReportText.table(lines)
    }

    /// One JSON object with every figure; keys in a fixed order.
    var json: String {
        var fields: [(String, String)] = [
            ("benchmark", "\"apple\""), ("seconds", ReportText.fixed(seconds, 1)), ("rounds", "\(rounds)"),
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
            if let low = row.roundRatios.min(), let high = row.roundRatios.max() {
                fields += [
                    ("\(row.key)_ratio_min", ReportText.fixed(low, 2)),
                    ("\(row.key)_ratio_max", ReportText.fixed(high, 2)),
                ]
            }
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
