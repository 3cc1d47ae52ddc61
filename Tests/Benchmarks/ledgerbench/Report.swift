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

    var appendsPerSecond: Double { seconds > 0 ? Double(appends) / seconds : 0 }
}

/// One engine and writer count: the ledger's figures beside the raw engine's.
struct ReportRow {
    var engine: String
    var writers: Int
    var ledger: LedgerFigures
    /// Same durability, same batch, one connection (as the ledger's single writer).
    var reference: ReferenceRun
    /// PostgreSQL with as many pgbench clients as writers (informational).
    var concurrentReference: ReferenceRun?
    /// Appends per commit the ledger's group committer formed, estimated from device flushes.
    var estimatedLedgerBatch: Double?

    /// ledger appends/s ÷ raw rows/s, rounded to two decimals (the value shown and judged).
    var ratio: Double { Self.ratio(ledger.appendsPerSecond, reference.rowsPerSecond) }
    var concurrentRatio: Double? { concurrentReference.map { Self.ratio(ledger.appendsPerSecond, $0.rowsPerSecond) } }

    static func ratio(_ ours: Double, _ theirs: Double) -> Double {
        theirs > 0 ? (ours / theirs * 100).rounded() / 100 : 0
    }

    static func perUnit(_ flushes: Int?, _ count: Int) -> Double? {
        guard let flushes, count > 0 else { return nil }
        return Double(flushes) / Double(count)
    }
}

/// The human table and the machine-readable JSON line of a run.
struct Report {
    let rows: [ReportRow]
    let targetRatio: Double

    var minRatio: Double? { rows.map(\.ratio).min() }

    /// Right-aligned columns, one row per engine and writer count.
    var table: String {
        let header = [
            "engine", "writers", "ledger appends/s", "p50 ms", "p99 ms", "raw engine rows/s", "raw run", "ratio",
            "verdict (target \(targetRatio)x)", "flushes/append", "raw flushes/row", "est. batch", "ledger cpu",
        ]
        var lines = [header]
        for row in rows {
            lines.append([
                row.engine, "\(row.writers)", ReportText.grouped(row.ledger.appendsPerSecond),
                ReportText.fixed(row.ledger.p50Milliseconds, 2), ReportText.fixed(row.ledger.p99Milliseconds, 2),
                ReportText.grouped(row.reference.rowsPerSecond),
                "\(row.reference.tool) \(row.reference.batch)/tx c\(row.reference.clients)",
                ReportText.fixed(row.ratio, 2),
                row.ratio >= targetRatio ? "meets target" : "below target",
                Self.optional(ReportRow.perUnit(row.ledger.flushes, row.ledger.appends), 3),
                Self.optional(ReportRow.perUnit(row.reference.flushes, row.reference.rows), 3),
                Self.optional(row.estimatedLedgerBatch, 1), Self.optional(row.ledger.serverCores, 2),
            ])
            if let concurrent = row.concurrentReference, let ratio = row.concurrentRatio {
                lines.append([
                    "", "", "", "", "", ReportText.grouped(concurrent.rowsPerSecond),
                    "\(concurrent.tool) \(concurrent.batch)/tx c\(concurrent.clients)", ReportText.fixed(ratio, 2),
                    "(informational)", "", Self.optional(ReportRow.perUnit(concurrent.flushes, concurrent.rows), 3), "",
                    "",
                ])
            }
        }
        return ReportText.table(lines)
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
                ("ledger_estimated_batch", Self.json(row.estimatedLedgerBatch, 2)),
            ]
            fields += Self.referenceFields(row.reference, prefix: "raw")
            fields += [("ratio", ReportText.fixed(row.ratio, 2)), ("meets_target", "\(row.ratio >= targetRatio)")]
            if let concurrent = row.concurrentReference, let ratio = row.concurrentRatio {
                fields += Self.referenceFields(concurrent, prefix: "raw_concurrent")
                fields.append(("ratio_concurrent", ReportText.fixed(ratio, 2)))
            }
            return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        }
        let minimum = minRatio.map { ReportText.fixed($0, 2) } ?? "null"
        let meets = rows.allSatisfy { $0.ratio >= targetRatio }
        return
            "{\"benchmark\":\"ledger\",\"target_ratio\":\(targetRatio),\"results\":[\(results.joined(separator: ","))],"
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
