import BenchSupport
import Foundation

/// One run of the whole comparison: for each engine, starts the ledger on it, then in each round
/// measures 1 and 32 writers and runs the raw-engine references right after, and finally reports
/// each figure by the median of its rounds' ratios.
struct Benchmark {
    static let writerCounts = [1, 32]
    /// The write ceiling on PostgreSQL: this many writers, on one instance and spread over four.
    static let ceilingWriters = 128
    static let ceilingInstances = 4

    let options: BenchOptions

    /// Runs everything and prints the table and, last, the JSON line. Throws when a process
    /// cannot be started, an append fails or a reference run breaks; every process and
    /// temporary directory is removed either way.
    func run() throws(BenchError) {
        BenchCommand.warnIfBusy("ledgerbench")
        let workload = AppendWorkload(runID: "lb\(getpid())")
        var rows: [ReportRow] = []
        var ceiling: [CeilingRow] = []
        if !options.skipSQLite { rows += try measureSQLite(workload) }
        if !options.skipPostgres {
            let measured = try measurePostgres(workload)
            rows += measured.rows
            ceiling = measured.ceiling
        }
        let report = Report(rows: rows, ceiling: ceiling)
        print(report.table)
        print(report.json)
    }

    // MARK: SQLite

    private func measureSQLite(_ workload: AppendWorkload) throws(BenchError) -> [ReportRow] {
        guard let sqlite3 = ChildProcess.resolve("sqlite3") else {
            throw BenchError("sqlite3 not found on PATH (scripts/install-deps bench)")
        }
        let directory = try TemporaryDirectory("ledgerbench-sqlite")
        defer { directory.remove() }
        let flushes = DeviceFlushes(path: directory.path)
        let databasePath = directory.file("ledger.sqlite")
        let ledger = try LedgerProcess(
            executable: options.serverPath,
            settings: ["LEDGER_STORE": "sqlite", "LEDGER_SQLITE_PATH": databasePath], directory: directory.path)
        defer { ledger.stop() }
        let schema = try SQLiteReference.schema(sqlite3: sqlite3, path: databasePath)
        let reference = SQLiteReference(
            sqlite3: sqlite3, schema: schema, sizes: workload.rowSizes(), directory: directory, flushes: flushes)
        // Each phase starts from a copy of the ledger's database as the phase began, so that the
        // raw engine inserts the phase's own keys into tables of the same size.
        var snapshots: [String: SQLiteReference.Snapshot] = [:]
        let rows = try rounds(
            engine: "sqlite", ledger: ledger, workload: workload, flushes: flushes,
            phaseStarts: { phase throws(BenchError) in
                snapshots[phase] = try reference.snapshot(ledgerPath: databasePath, name: "snapshot-\(phase).sqlite")
            },
            reference: { batch, rows throws(BenchError) in
                var snapshot: SQLiteReference.Snapshot?
                if case .phase(let name, _, _) = rows { snapshot = snapshots[name] }
                return try reference.measure(
                    batch: batch, seconds: options.referenceSeconds, rows: rows, from: snapshot)
            })
        for snapshot in snapshots.values { try? FileManager.default.removeItem(atPath: snapshot.path) }
        BenchCommand.noteUncleanExit("ledgerbench", ledger.stop(), of: options.serverPath)
        return rows
    }

    /// `options.rounds` rounds, each the ledger's phases and then, right after, `reference` with
    /// the batch each phase formed and that phase's rows (judged), and in the last round also with
    /// one batch of every writer, with sequential keys into empty tables and, for more than one
    /// writer, `concurrent`; one row per phase, the median round's. `phaseStarts` runs after each
    /// phase's warm-up, right before it is timed.
    private func rounds(
        engine: String, ledger: LedgerProcess, workload: AppendWorkload, flushes: DeviceFlushes?,
        phaseStarts: (_ phase: String) throws(BenchError) -> Void = { _ in },
        reference: (_ batch: Int, _ rows: ReferenceRows) throws(BenchError) -> ReferenceRun,
        concurrent: ((_ writers: Int, _ rows: ReferenceRows) throws(BenchError) -> ReferenceRun)? = nil
    ) throws(BenchError) -> [ReportRow] {
        var rounds: [[ReportRow]] = []
        for round in 1...options.rounds {
            let last = round == options.rounds
            let phases = try measureLedger(
                ledger, engine: engine, round: round, workload: workload, flushes: flushes, phaseStarts: phaseStarts)
            var rows: [ReportRow] = []
            for phase in phases {
                let writers = phase.writers
                let phaseRows = ReferenceRows.phase(name: phase.name, writers: writers, workload: workload)
                var runs: [(Int, ReferenceRows)] = Self.referenceBatches(
                    writers: writers, ledger: phase.figures, extras: last
                ).map { ($0, phaseRows) }
                if last { runs.append((runs[0].0, .empty)) }
                var row: ReportRow?
                for (batch, inserted) in runs {
                    let run = try reference(batch, inserted)
                    Self.note("round \(round): \(engine) reference, \(run.label): \(Int(run.rowsPerSecond)) rows/s")
                    if row == nil {
                        row = ReportRow(engine: engine, writers: writers, ledger: phase.figures, reference: run)
                    } else {
                        row!.extras.append(run)
                    }
                }
                if let concurrent, writers > 1 && last {
                    let run = try concurrent(writers, phaseRows)
                    Self.note("\(engine) reference, \(run.label): \(Int(run.rowsPerSecond)) rows/s")
                    row!.extras.append(run)
                }
                rows.append(row!)
            }
            rounds.append(rows)
        }
        return ReportRow.medians(of: rounds)
    }

    /// The batch sizes to run the raw engine with: first the ledger's mean batch in the phase
    /// (rounded, from its commit counters), then, with `extras` and where it differs, one row
    /// per writer.
    static func referenceBatches(writers: Int, ledger: LedgerFigures, extras: Bool) -> [Int] {
        let measured = max(1, Int(ledger.batch.rounded()))
        return measured == writers || !extras ? [measured] : [measured, writers]
    }

    // MARK: PostgreSQL

    private func measurePostgres(_ workload: AppendWorkload) throws(BenchError) -> (
        rows: [ReportRow], ceiling: [CeilingRow]
    ) {
        let tools = try PostgresTools(preferred: options.postgresBin)
        let server = try PostgresServer(script: options.postgresScript, name: "ledgerbench")
        defer { server.stop() }
        let directory = try TemporaryDirectory("ledgerbench-postgres-work")
        defer { directory.remove() }
        let flushes = DeviceFlushes(path: directory.path)
        let ledger = try LedgerProcess(
            executable: options.serverPath,
            settings: ["LEDGER_STORE": "postgres", "LEDGER_POSTGRES_URL": server.url], directory: directory.path)
        defer { ledger.stop() }
        let database = String(server.url.split(separator: "/").last ?? "ledger_test")
        let schema = try PgbenchReference.schema(tools: tools, port: server.port, database: database)
        let reference = PgbenchReference(
            tools: tools, port: server.port, schema: schema, sizes: workload.rowSizes(), directory: directory,
            flushes: flushes)
        // The ledger writes through one connection: the like-for-like reference is one pgbench
        // client with the ledger's batch (judged), then one client with a batch of every writer.
        // With 32 writers, 32 pgbench clients (each with that batch) show what the server does
        // when it can also group commits itself.
        let rows = try rounds(
            engine: "postgres", ledger: ledger, workload: workload, flushes: flushes,
            reference: { batch, rows throws(BenchError) in
                try reference.measure(batch: batch, clients: 1, seconds: options.referenceSeconds, rows: rows)
            },
            concurrent: { writers, rows throws(BenchError) in
                try reference.measure(batch: writers, clients: writers, seconds: options.referenceSeconds, rows: rows)
            })
        // The ceiling: many writers on this instance, then spread over several on the database.
        var ceiling = [try measureCeiling([ledger], workload: workload)]
        var others: [LedgerProcess] = []
        defer { for other in others { other.stop() } }
        for _ in 1..<Self.ceilingInstances {
            others.append(
                try LedgerProcess(
                    executable: options.serverPath,
                    settings: ["LEDGER_STORE": "postgres", "LEDGER_POSTGRES_URL": server.url],
                    directory: directory.path))
        }
        ceiling.append(try measureCeiling([ledger] + others, workload: workload))
        for other in others { BenchCommand.noteUncleanExit("ledgerbench", other.stop(), of: options.serverPath) }
        BenchCommand.noteUncleanExit("ledgerbench", ledger.stop(), of: options.serverPath)
        return (rows, ceiling)
    }

    /// `ceilingWriters` writers spread over `ledgers` (all on one database) for the phase's time.
    private func measureCeiling(_ ledgers: [LedgerProcess], workload: AppendWorkload) throws(BenchError)
        -> CeilingRow
    {
        let load = AppendLoad(ports: ledgers.map(\.port), workload: workload)
        let phase = "ceiling-\(ledgers.count)"
        let warmUp = try load.run(phase: "\(phase)-warm", writers: Self.ceilingWriters, seconds: 0.5)
        for ledger in ledgers { try check(warmUp, ledger) }
        let before = try ledgers.map { ledger throws(BenchError) in try ledger.commitTotals().commits }
        var outcome = try load.run(phase: phase, writers: Self.ceilingWriters, seconds: options.seconds)
        let after = try ledgers.map { ledger throws(BenchError) in try ledger.commitTotals().commits }
        for ledger in ledgers { try check(outcome, ledger) }
        let figures = LedgerFigures(
            appends: outcome.succeeded, seconds: outcome.seconds,
            p50Milliseconds: outcome.latencies.milliseconds(percentile: 0.50),
            p99Milliseconds: outcome.latencies.milliseconds(percentile: 0.99), serverCores: nil, clientCores: nil,
            flushes: nil, commits: 0, committedWrites: 0)
        Self.note(
            "postgres, \(ledgers.count) ledger instance(s), \(Self.ceilingWriters) writers: "
                + "\(Int(figures.appendsPerSecond)) appends/s")
        return CeilingRow(
            instances: ledgers.count, writers: Self.ceilingWriters, ledger: figures,
            commits: zip(before, after).reduce(0) { $0 + $1.1 - $1.0 })
    }

    // MARK: The ledger

    /// One timed phase of the ledger: its name (in its appends' keys), writers and figures.
    struct Phase {
        let name: String
        let writers: Int
        let figures: LedgerFigures
    }

    /// Measures every writer count against a running ledger: a short warm-up, `phaseStarts`,
    /// then the timed phase.
    private func measureLedger(
        _ ledger: LedgerProcess, engine: String, round: Int, workload: AppendWorkload, flushes: DeviceFlushes?,
        phaseStarts: (_ phase: String) throws(BenchError) -> Void
    ) throws(BenchError) -> [Phase] {
        let load = AppendLoad(port: ledger.port, workload: workload)
        var figures: [Phase] = []
        for writers in Self.writerCounts {
            // Each round's appends are new ones (their idempotency keys name the round).
            let phase = "\(engine)-r\(round)-w\(writers)"
            let warmUp = try load.run(phase: "\(phase)-warm", writers: writers, seconds: 0.5)
            try check(warmUp, ledger)
            try phaseStarts(phase)
            let serverBefore = ProcessCPU.seconds(pid: ledger.child.pid)
            let clientBefore = ProcessCPU.seconds()
            let flushesBefore = flushes?.count()
            let commitsBefore = try ledger.commitTotals()
            var outcome = try load.run(phase: phase, writers: writers, seconds: options.seconds)
            let flushesAfter = flushes?.count()
            let commitsAfter = try ledger.commitTotals()
            let serverAfter = ProcessCPU.seconds(pid: ledger.child.pid)
            let clientAfter = ProcessCPU.seconds()
            try check(outcome, ledger)
            func cores(_ before: Double?, _ after: Double?) -> Double? {
                guard let before, let after, outcome.seconds > 0 else { return nil }
                return (after - before) / outcome.seconds
            }
            var flushCount: Int?
            if let flushesBefore, let flushesAfter { flushCount = flushesAfter - flushesBefore }
            let result = LedgerFigures(
                appends: outcome.succeeded, seconds: outcome.seconds,
                p50Milliseconds: outcome.latencies.milliseconds(percentile: 0.50),
                p99Milliseconds: outcome.latencies.milliseconds(percentile: 0.99),
                serverCores: cores(serverBefore, serverAfter), clientCores: cores(clientBefore, clientAfter),
                flushes: flushCount, commits: commitsAfter.commits - commitsBefore.commits,
                committedWrites: commitsAfter.writes - commitsBefore.writes)
            Self.note("round \(round): \(engine) ledger, \(writers) writers: \(Int(result.appendsPerSecond)) appends/s")
            figures.append(Phase(name: phase, writers: writers, figures: result))
        }
        return figures
    }

    /// Throws when any append of a phase failed (naming the first failure, and a ledger that died).
    private func check(_ outcome: LoadGenerator.Outcome, _ ledger: LedgerProcess) throws(BenchError) {
        guard outcome.failed > 0 || outcome.succeeded == 0 else { return }
        var message =
            "\(outcome.failed) of \(outcome.failed + outcome.succeeded) appends failed; the first: \(outcome.firstFailure ?? "none succeeded")"
        if ledger.child.waitForExit(within: .milliseconds(500)) {
            message += "; the ledger has exited (its log is above)"
        }
        throw BenchError(message)
    }

    static func note(_ text: String) { BenchCommand.note("ledgerbench", text) }
}
