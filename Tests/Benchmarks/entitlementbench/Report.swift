import BenchSupport

/// One load configuration's figures: ours, redis-benchmark's (nil with --skip-redis), CPU use.
struct LoadRow {
    var clients: Int
    var pipeline: Int
    var requests: Int
    var callsPerSecond: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    /// CPU cores the service and the load generator kept busy during the measured phase.
    var serverCores: Double?
    var generatorCores: Double?
    var redis: RedisBenchmark?

    /// The least ratio to Redis that meets the target: 0.6 unpipelined, 0.5 pipelined on one
    /// connection, 0.8 at 50 connections pipelined.
    var targetRatio: Double { pipeline == 1 ? 0.6 : clients > 1 ? 0.8 : 0.5 }

    /// calls/s ÷ redis GET/s, rounded to two decimals (the value shown and judged).
    var ratio: Double? {
        redis.map { $0.opsPerSecond > 0 ? (callsPerSecond / $0.opsPerSecond * 100).rounded() / 100 : 0 }
    }

    var meetsTarget: Bool { ratio.map { $0 >= targetRatio } ?? false }
}

/// CPU seconds each process spent from the service's spawn until it was ready, and the bytes
/// the ledger read from storage meanwhile (nil when /proc could not tell).
struct StartCPU {
    var ledgerSeconds: Double?
    var entitlementSeconds: Double?
    var ledgerReadBytes: Int?
}

/// The restart from a checkpoint: how long the stop that wrote it took, its size, the start on
/// it and the memory after.
struct CheckpointRestart {
    var stopSeconds: Double
    var fileBytes: Int
    var readySeconds: Double
    var cpu: StartCPU
    var memory: ProcessMemory.Resident
}

/// The human table and the machine-readable JSON line of a run, with a verdict per target.
struct Report {
    static let bytesPerAccountTarget = 250.0
    /// Ready from a snapshot (the page cache emptied first), judged from 1,000,000 accounts up.
    static let readySecondsTarget = 30.0
    static let readyTargetAccounts = 1_000_000
    /// Ready from a checkpoint, judged from 10,000,000 accounts up.
    static let checkpointReadySecondsTarget = 5.0
    static let checkpointReadyTargetAccounts = 10_000_000
    static let propagationP99Target = 5.0

    let accounts: Int
    let seedSeconds: Double
    /// Rows written to the `periods` table, and the bytes of their raw signed data.
    let seededPeriods: Int
    /// Paid months seeded per subscription (`--months`).
    let months: Int
    let seededRawBytes: Int
    let readySeconds: Double
    let startCPU: StartCPU
    /// How the page cache was emptied before the first instance started.
    let eviction: PageCacheEviction.Method
    /// A second instance's start, the ledger running (its page cache warm).
    let secondReadySeconds: Double
    let secondStartCPU: StartCPU
    /// The first instance stopped (writing its checkpoint) and started again on it.
    let checkpoint: CheckpointRestart
    let emptyMemory: ProcessMemory.Resident
    let loadedMemory: ProcessMemory.Resident
    let rows: [LoadRow]
    /// CheckAccess over HTTP with `HTTPCheckAccess.connections` connections, beside nginx.
    let http: HTTPComparison
    let propagationSamples: Int
    let propagationP50Milliseconds: Double
    let propagationP99Milliseconds: Double
    let propagationMaxMilliseconds: Double
    let errors: Int

    var rawBytesPerPeriod: Double { seededPeriods == 0 ? 0 : Double(seededRawBytes) / Double(seededPeriods) }
    var bytesPerAccount: Double { Double(loadedMemory.bytes - emptyMemory.bytes) / Double(accounts) }
    var checkpointBytesPerAccount: Double { Double(checkpoint.memory.bytes - emptyMemory.bytes) / Double(accounts) }
    var memoryMeetsTarget: Bool { max(bytesPerAccount, checkpointBytesPerAccount) <= Self.bytesPerAccountTarget }
    var readyJudged: Bool { accounts >= Self.readyTargetAccounts }
    var checkpointReadyJudged: Bool { accounts >= Self.checkpointReadyTargetAccounts }
    /// Each ready target that is judged at this size is met, and one at least is judged.
    var readyMeetsTarget: Bool {
        readyJudged && readySeconds <= Self.readySecondsTarget
            && (!checkpointReadyJudged || checkpoint.readySeconds <= Self.checkpointReadySecondsTarget)
    }
    var propagationMeetsTarget: Bool { propagationP99Milliseconds <= Self.propagationP99Target }
    var unpipelinedMeetTarget: Bool { rows.filter { $0.pipeline == 1 }.allSatisfy(\.meetsTarget) }
    var pipelinedMeetTarget: Bool { rows.filter { $0.pipeline > 1 }.allSatisfy(\.meetsTarget) }
    var allMeetTarget: Bool {
        unpipelinedMeetTarget && pipelinedMeetTarget && memoryMeetsTarget && readyMeetsTarget
            && propagationMeetsTarget && http.meetsTarget && errors == 0
    }

    private static func verdict(_ meets: Bool) -> String { meets ? "meets target" : "misses target" }

    private static func mebibytes(_ bytes: Int) -> String { ReportText.fixed(Double(bytes) / 1_048_576, 1) }

    private static func shownMebibytes(_ bytes: Int?) -> String { bytes.map(mebibytes) ?? "-" }

    private static func shown(_ value: Double?, _ decimals: Int) -> String {
        value.map { ReportText.fixed($0, decimals) } ?? "-"
    }

    /// figure, ours, reference, ratio, target, verdict: a row per load figure, then memory,
    /// start and propagation.
    var table: String {
        var lines = [["figure", "ours", "reference", "ratio", "target", "verdict"]]
        for row in rows {
            let shape = "\(row.clients) client\(row.clients == 1 ? "" : "s"), pipeline \(row.pipeline)"
            let redis = row.redis
            lines.append([
                "CheckAccess/s vs redis GET/s, \(shape)", ReportText.grouped(row.callsPerSecond),
                redis.map { ReportText.grouped($0.opsPerSecond) } ?? "-",
                row.ratio.map { ReportText.fixed($0, 2) } ?? "-", "≥ \(row.targetRatio)×",
                row.ratio == nil ? "not measured" : Self.verdict(row.meetsTarget),
            ])
            lines += Self.latencyLines(
                (row.p50Milliseconds, row.p99Milliseconds), redis.map { ($0.p50Milliseconds, $0.p99Milliseconds) })
        }
        let binary = rows.first { $0.clients == HTTPCheckAccess.connections && $0.pipeline == 1 }
        lines.append([
            "CheckAccess/s over HTTP (JSON, keep-alive) vs binary RPC, \(HTTPCheckAccess.connections) clients",
            ReportText.grouped(http.ours.callsPerSecond), binary.map { ReportText.grouped($0.callsPerSecond) } ?? "-",
            httpRatio.map { ReportText.fixed($0, 2) } ?? "-", "", "",
        ])
        lines += Self.latencyLines(
            (http.ours.p50Milliseconds, http.ours.p99Milliseconds),
            binary.map { ($0.p50Milliseconds, $0.p99Milliseconds) })
        lines += http.lines
        lines.append([
            "resident bytes per account, \(months) paid months each (\(ReportText.grouped(Double(accounts))) "
                + "accounts)",
            ReportText.grouped(bytesPerAccount), "", "", "≤ \(Int(Self.bytesPerAccountTarget)) per account",
            Self.verdict(memoryMeetsTarget),
        ])
        lines.append([
            "  periods rows seeded (\(months) per subscription, both stores)",
            ReportText.grouped(Double(seededPeriods)), "", "", "", "",
        ])
        lines.append(["  raw signed bytes per period, mean", ReportText.grouped(rawBytesPerPeriod), "", "", "", ""])
        lines.append([
            "  seeding s", seedSeconds == 0 ? "(earlier run)" : ReportText.fixed(seedSeconds, 1), "", "", "", "",
        ])
        lines.append([
            "  resident MiB, loaded view vs empty view", Self.mebibytes(loadedMemory.bytes),
            Self.mebibytes(emptyMemory.bytes), "", "", "",
        ])
        lines.append(["  peak resident MiB while loading", Self.mebibytes(loadedMemory.peakBytes), "", "", "", ""])
        lines.append([
            "  resident bytes per account, started from the checkpoint", ReportText.grouped(checkpointBytesPerAccount),
            "", "", "", "",
        ])
        let judged = "not judged (fewer accounts)"
        lines.append([
            "ready from a checkpoint, s (\(ReportText.grouped(Double(accounts))) accounts)",
            ReportText.fixed(checkpoint.readySeconds, 2), "", "",
            "≤ \(Int(Self.checkpointReadySecondsTarget)) at 10,000,000",
            checkpointReadyJudged
                ? Self.verdict(checkpoint.readySeconds <= Self.checkpointReadySecondsTarget) : judged,
        ])
        lines.append([
            "  entitlement CPU s until ready", Self.shown(checkpoint.cpu.entitlementSeconds, 2), "", "", "", "",
        ])
        lines.append(["  checkpoint MiB", Self.mebibytes(checkpoint.fileBytes), "", "", "", ""])
        lines.append([
            "  stop with the checkpoint written, s", ReportText.fixed(checkpoint.stopSeconds, 2), "", "", "", "",
        ])
        lines.append([
            "ready from a snapshot, page cache emptied, s (\(ReportText.grouped(Double(accounts))) accounts)",
            ReportText.fixed(readySeconds, 2), "", "", "≤ \(Int(Self.readySecondsTarget)) at 1,000,000",
            readyJudged ? Self.verdict(readySeconds <= Self.readySecondsTarget) : judged,
        ])
        lines.append(["  page cache emptied by", eviction.rawValue, "", "", "", ""])
        lines.append(["  ledger CPU s until ready", Self.shown(startCPU.ledgerSeconds, 2), "", "", "", ""])
        lines.append(["  entitlement CPU s until ready", Self.shown(startCPU.entitlementSeconds, 2), "", "", "", ""])
        lines.append(["  ledger MiB read from storage", Self.shownMebibytes(startCPU.ledgerReadBytes), "", "", "", ""])
        lines.append([
            "second instance to ready, s (the ledger running)", ReportText.fixed(secondReadySeconds, 2), "", "", "",
            "",
        ])
        lines.append(["  ledger CPU s until ready", Self.shown(secondStartCPU.ledgerSeconds, 2), "", "", "", ""])
        lines.append([
            "  entitlement CPU s until ready", Self.shown(secondStartCPU.entitlementSeconds, 2), "", "", "", "",
        ])
        lines.append([
            "  ledger MiB read from storage", Self.shownMebibytes(secondStartCPU.ledgerReadBytes), "", "", "", "",
        ])
        lines.append([
            "purchase to CheckAccess allowed, p50 ms", ReportText.fixed(propagationP50Milliseconds, 2), "", "", "", "",
        ])
        lines.append([
            "purchase to CheckAccess allowed, p99 ms (\(propagationSamples) purchases)",
            ReportText.fixed(propagationP99Milliseconds, 2), "", "", "≤ \(Int(Self.propagationP99Target))",
            Self.verdict(propagationMeetsTarget),
        ])
        lines.append([
            "  max ms", ReportText.fixed(propagationMaxMilliseconds, 2), "", "", "", "",
        ])
        // Left-align the first column, right-align the rest.
        let width = lines.map { $0[0].count }.max() ?? 0
        let rest = ReportText.table(lines.map { Array($0.dropFirst()) }).split(
            separator: "\n", omittingEmptySubsequences: false)
        return zip(lines, rest).map { cells, tail in
            cells[0] + String(repeating: " ", count: width - cells[0].count) + "  " + tail
        }.joined(separator: "\n")
    }

    /// The p50 and p99 lines under a throughput line: ours and the reference's.
    private static func latencyLines(_ ours: (Double, Double), _ reference: (Double, Double)?) -> [[String]] {
        [
            ["  p50 ms", ReportText.fixed(ours.0, 3), reference.map { ReportText.fixed($0.0, 3) } ?? "-", "", "", ""],
            ["  p99 ms", ReportText.fixed(ours.1, 3), reference.map { ReportText.fixed($0.1, 3) } ?? "-", "", "", ""],
        ]
    }

    /// HTTP calls/s ÷ binary calls/s at the same connection count, unpipelined.
    var httpRatio: Double? {
        rows.first { $0.clients == HTTPCheckAccess.connections && $0.pipeline == 1 }.map {
            $0.callsPerSecond > 0 ? (http.ours.callsPerSecond / $0.callsPerSecond * 100).rounded() / 100 : 0
        }
    }

    /// One JSON object with every figure, ratio and a boolean per target; keys in a fixed order.
    var json: String {
        func number(_ value: Double?, _ decimals: Int) -> String {
            value.map { ReportText.fixed($0, decimals) } ?? "null"
        }
        let results = rows.map { row in
            let fields = [
                ("clients", "\(row.clients)"), ("pipeline", "\(row.pipeline)"), ("requests", "\(row.requests)"),
                ("calls_per_s", ReportText.fixed(row.callsPerSecond, 0)),
                ("p50_ms", ReportText.fixed(row.p50Milliseconds, 3)),
                ("p99_ms", ReportText.fixed(row.p99Milliseconds, 3)),
                ("redis_ops_per_s", number(row.redis?.opsPerSecond, 0)),
                ("redis_p50_ms", number(row.redis?.p50Milliseconds, 3)),
                ("redis_p99_ms", number(row.redis?.p99Milliseconds, 3)),
                ("ratio", number(row.ratio, 2)), ("target_ratio", "\(row.targetRatio)"),
                ("meets_target", "\(row.meetsTarget)"),
                ("server_cpu_cores", number(row.serverCores, 2)),
                ("client_cpu_cores", number(row.generatorCores, 2)),
            ]
            return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        }
        let fields: [(String, String)] =
            [
                ("benchmark", "\"entitlement\""), ("accounts", "\(accounts)"),
                ("seed_seconds", ReportText.fixed(seedSeconds, 2)),
                ("months", "\(months)"),
                ("seeded_periods", "\(seededPeriods)"),
                ("seeded_raw_bytes_per_period", ReportText.fixed(rawBytesPerPeriod, 0)),
                ("results", "[\(results.joined(separator: ","))]"),
            ] + http.fields + [
                ("http_vs_binary_ratio", number(httpRatio, 2)),
                ("unpipelined_meet_target", "\(unpipelinedMeetTarget)"),
                ("pipelined_meet_target", "\(pipelinedMeetTarget)"),
                ("rss_empty_bytes", "\(emptyMemory.bytes)"), ("rss_loaded_bytes", "\(loadedMemory.bytes)"),
                ("rss_loaded_peak_bytes", "\(loadedMemory.peakBytes)"),
                ("bytes_per_account", ReportText.fixed(bytesPerAccount, 1)),
                ("bytes_per_account_target", "\(Int(Self.bytesPerAccountTarget))"),
                ("memory_meets_target", "\(memoryMeetsTarget)"),
                ("checkpoint_bytes_per_account", ReportText.fixed(checkpointBytesPerAccount, 1)),
                ("checkpoint_ready_seconds", ReportText.fixed(checkpoint.readySeconds, 3)),
                ("checkpoint_ready_target_seconds", "\(Int(Self.checkpointReadySecondsTarget))"),
                ("checkpoint_ready_entitlement_cpu_seconds", number(checkpoint.cpu.entitlementSeconds, 2)),
                ("checkpoint_file_bytes", "\(checkpoint.fileBytes)"),
                ("checkpoint_stop_seconds", ReportText.fixed(checkpoint.stopSeconds, 3)),
                ("ready_seconds", ReportText.fixed(readySeconds, 3)),
                ("ready_target_seconds", "\(Int(Self.readySecondsTarget))"),
                ("ready_judged", "\(readyJudged)"), ("ready_meets_target", "\(readyMeetsTarget)"),
                ("checkpoint_ready_judged", "\(checkpointReadyJudged)"),
                ("ready_page_cache_eviction", "\"\(eviction.rawValue)\""),
                ("ready_ledger_cpu_seconds", number(startCPU.ledgerSeconds, 2)),
                ("ready_entitlement_cpu_seconds", number(startCPU.entitlementSeconds, 2)),
                ("ready_ledger_read_bytes", startCPU.ledgerReadBytes.map { "\($0)" } ?? "null"),
                ("second_ready_seconds", ReportText.fixed(secondReadySeconds, 3)),
                ("second_ready_ledger_cpu_seconds", number(secondStartCPU.ledgerSeconds, 2)),
                ("second_ready_entitlement_cpu_seconds", number(secondStartCPU.entitlementSeconds, 2)),
                ("second_ready_ledger_read_bytes", secondStartCPU.ledgerReadBytes.map { "\($0)" } ?? "null"),
                ("propagation_samples", "\(propagationSamples)"),
                ("propagation_p50_ms", ReportText.fixed(propagationP50Milliseconds, 3)),
                ("propagation_p99_ms", ReportText.fixed(propagationP99Milliseconds, 3)),
                ("propagation_max_ms", ReportText.fixed(propagationMaxMilliseconds, 3)),
                ("propagation_target_p99_ms", "\(Int(Self.propagationP99Target))"),
                ("propagation_meets_target", "\(propagationMeetsTarget)"),
                ("errors", "\(errors)"), ("all_meet_target", "\(allMeetTarget)"),
            ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
}
