import BenchSupport
import Foundation

/// What the ledger did in one measured phase.
struct LedgerFigures {
    var appends: Int
    var seconds: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    /// CPU cores the ledger process and this benchmark kept busy during the phase.
    var serverCores: Double?
    var clientCores: Double?
    /// Device flushes during the phase (nil when the counter is unavailable).
    var flushes: Int?
    /// The ledger's commits and the writes they acknowledged in the phase (its /metrics).
    var commits: Int
    var committedWrites: Int

    /// Appends per commit the group committer formed.
    var batch: Double { commits > 0 ? Double(committedWrites) / Double(commits) : 0 }

    var appendsPerSecond: Double { seconds > 0 ? Double(appends) / seconds : 0 }
}

/// One engine and writer count: the ledger's figures beside the raw engine's.
struct ReportRow {
    var engine: String
    var writers: Int
    var ledger: LedgerFigures
    /// Same durability, the batch the ledger formed, one connection (as the ledger's single
    /// writer): the judged comparison.
    var reference: ReferenceRun
    /// Informational runs: one batch of every writer; sequential keys into empty tables;
    /// PostgreSQL with as many clients as writers.
    var extras: [ReferenceRun] = []

    /// Every round's ratio, when the row stands for several rounds (it is then the median one).
    var roundRatios: [Double] = []

    /// ledger appends/s ÷ raw rows/s, rounded to two decimals (the value shown and judged).
    var ratio: Double { Self.ratio(ledger.appendsPerSecond, reference.rowsPerSecond) }

    /// The rounds' lowest and highest ratio, as the table shows them.
    var spread: String { ReportText.range(roundRatios) }

    /// One row per engine and writer count from `rounds` (each round's rows in the same order):
    /// the round whose ratio is the median (the lower middle for an even count), with every
    /// round's ratio and the informational runs of the round that made them.
    static func medians(of rounds: [[ReportRow]]) -> [ReportRow] {
        guard let first = rounds.first else { return [] }
        return first.indices.map { index in
            let candidates = rounds.map { $0[index] }
            let sorted = candidates.sorted { $0.ratio < $1.ratio }
            var row = sorted[(sorted.count - 1) / 2]
            row.roundRatios = candidates.map(\.ratio)
            if row.extras.isEmpty { row.extras = candidates.first { !$0.extras.isEmpty }?.extras ?? [] }
            return row
        }
    }

    /// The least ratio that meets the target: 0.85 of sqlite3, 0.9 of pgbench.
    var targetRatio: Double { engine == "sqlite" ? 0.85 : 0.9 }
    var meetsTarget: Bool { ratio >= targetRatio }

    static func ratio(_ ours: Double, _ theirs: Double) -> Double {
        theirs > 0 ? (ours / theirs * 100).rounded() / 100 : 0
    }

    static func perUnit(_ flushes: Int?, _ count: Int) -> Double? {
        guard let flushes, count > 0 else { return nil }
        return Double(flushes) / Double(count)
    }
}

/// Writes from several ledger instances on one PostgreSQL database at once: the whole system's
/// write ceiling, which one feed order (a lock per batch) sets.
struct CeilingRow {
    var instances: Int
    var writers: Int
    var ledger: LedgerFigures
    /// The sum of the instances' batches, and their CPU.
    var commits: Int
}

/// The human table and the machine-readable JSON line of a run.
struct Report {
    let rows: [ReportRow]
    var ceiling: [CeilingRow] = []

    var minRatio: Double? { rows.map(\.ratio).min() }

    /// Right-aligned columns, one row per engine and writer count.
    var table: String {
        let header = [
            "engine", "writers", "ledger appends/s", "p50 ms", "p99 ms", "raw engine rows/s", "raw run", "ratio",
            "rounds", "verdict (target)", "flushes/append", "raw flushes/row", "ledger batch", "ledger cpu",
        ]
        var lines = [header]
        for row in rows {
            lines.append([
                row.engine, "\(row.writers)", ReportText.grouped(row.ledger.appendsPerSecond),
                ReportText.fixed(row.ledger.p50Milliseconds, 2), ReportText.fixed(row.ledger.p99Milliseconds, 2),
                ReportText.grouped(row.reference.rowsPerSecond),
                row.reference.label,
                ReportText.fixed(row.ratio, 2), row.spread,
                (row.meetsTarget ? "meets" : "below") + " \(row.targetRatio)x",
                Self.optional(ReportRow.perUnit(row.ledger.flushes, row.ledger.appends), 3),
                Self.optional(ReportRow.perUnit(row.reference.flushes, row.reference.rows), 3),
                ReportText.fixed(row.ledger.batch, 1), Self.optional(row.ledger.serverCores, 2),
            ])
            for extra in row.extras {
                lines.append([
                    "", "", "", "", "", ReportText.grouped(extra.rowsPerSecond),
                    extra.label,
                    ReportText.fixed(ReportRow.ratio(row.ledger.appendsPerSecond, extra.rowsPerSecond), 2), "",
                    "(informational)", "", Self.optional(ReportRow.perUnit(extra.flushes, extra.rows), 3), "", "",
                ])
            }
        }
        var text = ReportText.table(lines)
        guard !ceiling.isEmpty else { return text }
        var ceilingLines = [["PostgreSQL, one database", "writers", "appends/s", "p50 ms", "p99 ms", "appends/commit"]]
        for row in ceiling {
            ceilingLines.append([
                "\(row.instances) ledger instance\(row.instances == 1 ? "" : "s")", "\(row.writers)",
                ReportText.grouped(row.ledger.appendsPerSecond), ReportText.fixed(row.ledger.p50Milliseconds, 2),
                ReportText.fixed(row.ledger.p99Milliseconds, 2),
                ReportText.fixed(row.commits > 0 ? Double(row.ledger.appends) / Double(row.commits) : 0, 1),
            ])
        }
        text += "\n\n" + ReportText.table(ceilingLines)
        return text
    }

    /// One JSON object with every figure; keys in a fixed order.
    var json: String {
        let results = rows.map { row in
            var fields = [
                ("engine", "\"\(row.engine)\""), ("writers", "\(row.writers)"),
                ("ledger_appends", "\(row.ledger.appends)"),
                ("ledger_seconds", ReportText.fixed(row.ledger.seconds, 3)),
                ("ledger_appends_per_s", ReportText.fixed(row.ledger.appendsPerSecond, 0)),
                ("ledger_p50_ms", ReportText.fixed(row.ledger.p50Milliseconds, 3)),
                ("ledger_p99_ms", ReportText.fixed(row.ledger.p99Milliseconds, 3)),
                ("ledger_cpu_cores", Self.json(row.ledger.serverCores, 2)),
                ("client_cpu_cores", Self.json(row.ledger.clientCores, 2)),
                ("ledger_device_flushes", row.ledger.flushes.map { "\($0)" } ?? "null"),
                ("ledger_commits", "\(row.ledger.commits)"),
                ("ledger_batch", ReportText.fixed(row.ledger.batch, 2)),
            ]
            fields += Self.referenceFields(row.reference, prefix: "raw")
            fields += [
                ("ratio", ReportText.fixed(row.ratio, 2)),
                ("round_ratios", "[" + row.roundRatios.map { ReportText.fixed($0, 2) }.joined(separator: ",") + "]"),
                ("target_ratio", "\(row.targetRatio)"),
                ("meets_target", "\(row.meetsTarget)"),
            ]
            for extra in row.extras {
                // Named by what differs from the judged run: empty tables, the client count, or
                // the batch.
                let prefix =
                    extra.empty ? "raw_empty" : extra.clients > 1 ? "raw_c\(extra.clients)" : "raw_batch\(extra.batch)"
                fields += Self.referenceFields(extra, prefix: prefix)
                fields.append(
                    (
                        "\(prefix)_ratio",
                        ReportText.fixed(ReportRow.ratio(row.ledger.appendsPerSecond, extra.rowsPerSecond), 2)
                    ))
            }
            return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        }
        let minimum = minRatio.map { ReportText.fixed($0, 2) } ?? "null"
        let meets = rows.allSatisfy(\.meetsTarget)
        let ceilings = ceiling.map { row in
            "{\"instances\":\(row.instances),\"writers\":\(row.writers),"
                + "\"appends_per_s\":\(ReportText.fixed(row.ledger.appendsPerSecond, 0)),"
                + "\"p50_ms\":\(ReportText.fixed(row.ledger.p50Milliseconds, 3)),"
                + "\"p99_ms\":\(ReportText.fixed(row.ledger.p99Milliseconds, 3)),\"commits\":\(row.commits)}"
        }
        return
            "{\"benchmark\":\"ledger\",\"results\":[\(results.joined(separator: ","))],"
            + "\"postgres_ceiling\":[\(ceilings.joined(separator: ","))],"
            + "\"min_ratio\":\(minimum),\"all_meet_target\":\(meets),\"errors\":0}"
    }

    private static func referenceFields(_ run: ReferenceRun, prefix: String) -> [(String, String)] {
        [
            ("\(prefix)_tool", "\"\(run.tool)\""), ("\(prefix)_rows_per_tx", "\(run.batch)"),
            ("\(prefix)_clients", "\(run.clients)"), ("\(prefix)_rows", "\(run.rows)"),
            ("\(prefix)_seconds", ReportText.fixed(run.seconds, 3)),
            ("\(prefix)_rows_per_s", ReportText.fixed(run.rowsPerSecond, 0)),
            ("\(prefix)_device_flushes", run.flushes.map { "\($0)" } ?? "null"),
        ]
    }

    private static func optional(_ value: Double?, _ decimals: Int) -> String {
        value.map { ReportText.fixed($0, decimals) } ?? "-"
    }

    private static func json(_ value: Double?, _ decimals: Int) -> String {
        value.map { ReportText.fixed($0, decimals) } ?? "null"
    }

}
