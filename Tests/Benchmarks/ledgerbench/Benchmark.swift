import BenchSupport
import Foundation

/// One run of the whole comparison: for each engine, starts the ledger on it, measures 1 and 32
/// writers, stops it, runs the raw-engine references, and finally reports.
struct Benchmark {
    static let writerCounts = [1, 32]
    static let targetRatio = 0.7

    let options: BenchOptions

    /// Runs everything and prints the table and, last, the JSON line. Throws when a process
    /// cannot be started, an append fails or a reference run breaks; every process and
    /// temporary directory is removed either way.
    func run() throws(BenchError) {
        Self.warnIfBusy()
        let workload = AppendWorkload(runID: "lb\(getpid())")
        var rows: [ReportRow] = []
        if !options.skipSQLite { rows += try measureSQLite(workload) }
        if !options.skipPostgres { rows += try measurePostgres(workload) }
        let report = Report(rows: rows, targetRatio: Self.targetRatio)
        print(report.table)
        print(report.json)
    }

    // MARK: SQLite

    private func measureSQLite(_ workload: AppendWorkload) throws(BenchError) -> [ReportRow] {
        guard let sqlite3 = ChildProcess.resolve("sqlite3") else {
            throw BenchError("sqlite3 not found on PATH (scripts/install-deps bench)")
        }
        let directory = try TemporaryDirectory("sqlite")
        defer { directory.remove() }
        let flushes = DeviceFlushes(path: directory.path)
        let databasePath = directory.file("ledger.sqlite")
        let ledger = try LedgerProcess(
            executable: options.serverPath,
            settings: ["LEDGER_STORE": "sqlite", "LEDGER_SQLITE_PATH": databasePath], directory: directory.path)
        defer { ledger.stop() }
        let schema = try SQLiteReference.schema(sqlite3: sqlite3, path: databasePath)
        let figures = try measureLedger(ledger, engine: "sqlite", workload: workload, flushes: flushes)
        stopCleanly(ledger)

        let reference = SQLiteReference(
            sqlite3: sqlite3, schema: schema, sizes: workload.rowSizes(), directory: directory, flushes: flushes)
        var rows: [ReportRow] = []
        for (writers, ledgerFigures) in figures {
            let run = try reference.measure(batch: writers, seconds: options.referenceSeconds)
            Self.note("sqlite reference, \(writers) rows per transaction: \(Int(run.rowsPerSecond)) rows/s")
            rows.append(ReportRow(engine: "sqlite", writers: writers, ledger: ledgerFigures, reference: run))
        }
        return Self.withBatchEstimates(rows)
    }

    // MARK: PostgreSQL

    private func measurePostgres(_ workload: AppendWorkload) throws(BenchError) -> [ReportRow] {
        let tools = try PostgresTools(preferred: options.postgresBin)
        let server = try PostgresServer(script: options.postgresScript)
        defer { server.stop() }
        let directory = try TemporaryDirectory("postgres-work")
        defer { directory.remove() }
        let flushes = DeviceFlushes(path: directory.path)
        let ledger = try LedgerProcess(
            executable: options.serverPath,
            settings: ["LEDGER_STORE": "postgres", "LEDGER_POSTGRES_URL": server.url], directory: directory.path)
        defer { ledger.stop() }
        let database = String(server.url.split(separator: "/").last ?? "ledger_test")
        let schema = try PgbenchReference.schema(tools: tools, port: server.port, database: database)
        let figures = try measureLedger(ledger, engine: "postgres", workload: workload, flushes: flushes)
        stopCleanly(ledger)

        let reference = PgbenchReference(
            tools: tools, port: server.port, schema: schema, sizes: workload.rowSizes(), directory: directory,
            flushes: flushes)
        var rows: [ReportRow] = []
        for (writers, ledgerFigures) in figures {
            // The ledger writes through one connection: the like-for-like reference is one
            // pgbench client with the ledger's batch. With 32 writers, 32 pgbench clients (each
            // with that batch) show what the server does when it can also group commits itself.
            let run = try reference.measure(batch: writers, clients: 1, seconds: options.referenceSeconds)
            Self.note("postgres reference, \(writers) rows per transaction, 1 client: \(Int(run.rowsPerSecond)) rows/s")
            var row = ReportRow(engine: "postgres", writers: writers, ledger: ledgerFigures, reference: run)
            if writers > 1 {
                let concurrent = try reference.measure(
                    batch: writers, clients: writers, seconds: options.referenceSeconds)
                Self.note(
                    "postgres reference, \(writers) rows per transaction, \(writers) clients: \(Int(concurrent.rowsPerSecond)) rows/s"
                )
                row.concurrentReference = concurrent
            }
            rows.append(row)
        }
        return Self.withBatchEstimates(rows)
    }

    // MARK: The ledger

    /// Measures every writer count against a running ledger: a short warm-up, then the timed phase.
    private func measureLedger(
        _ ledger: LedgerProcess, engine: String, workload: AppendWorkload, flushes: DeviceFlushes?
    ) throws(BenchError) -> [(Int, LedgerFigures)] {
        let load = try AppendLoad(port: ledger.port, workload: workload)
        defer { load.shutdown() }
        var figures: [(Int, LedgerFigures)] = []
        for writers in Self.writerCounts {
            let warmUp = load.run(phase: "\(engine)-w\(writers)-warm", writers: writers, seconds: 0.5)
            try check(warmUp, ledger)
            let serverBefore = ProcessCPU.seconds(pid: ledger.child.pid)
            let clientBefore = ProcessCPU.seconds()
            let flushesBefore = flushes?.count()
            var outcome = load.run(phase: "\(engine)-w\(writers)", writers: writers, seconds: options.seconds)
            let flushesAfter = flushes?.count()
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
                flushes: flushCount)
            Self.note("\(engine) ledger, \(writers) writers: \(Int(result.appendsPerSecond)) appends/s")
            figures.append((writers, result))
        }
        return figures
    }

    /// Throws when any append of a phase failed (naming the first failure, and a ledger that died).
    private func check(_ outcome: AppendLoad.Outcome, _ ledger: LedgerProcess) throws(BenchError) {
        guard outcome.failed > 0 || outcome.succeeded == 0 else { return }
        var message =
            "\(outcome.failed) of \(outcome.failed + outcome.succeeded) appends failed; the first: \(outcome.firstFailure ?? "none succeeded")"
        if ledger.child.waitForExit(within: .milliseconds(500)) {
            message += "; the ledger has exited (its log is above)"
        }
        throw BenchError(message)
    }

    private func stopCleanly(_ ledger: LedgerProcess) {
        let status = ledger.stop()
        if status != 0 {
            Self.note(
                "\(options.serverPath) did not exit cleanly on SIGTERM (\(status.map { "status \($0)" } ?? "killed by a signal"))"
            )
        }
    }

    /// Fills in each row's estimated ledger batch: the reference at one row per transaction
    /// shows how many device flushes one commit costs on this machine; the ledger's flushes
    /// divided by that estimate its commits.
    private static func withBatchEstimates(_ rows: [ReportRow]) -> [ReportRow] {
        guard let single = rows.first(where: { $0.reference.batch == 1 && $0.reference.clients == 1 })?.reference,
            let flushes = single.flushes, single.transactions > 0, flushes > 0
        else { return rows }
        let flushesPerCommit = Double(flushes) / Double(single.transactions)
        return rows.map { row in
            var row = row
            if let ledgerFlushes = row.ledger.flushes, ledgerFlushes > 0 {
                row.estimatedLedgerBatch = Double(row.ledger.appends) / (Double(ledgerFlushes) / flushesPerCommit)
            }
            return row
        }
    }

    /// Other work on the machine moves every figure here, so say so.
    private static func warnIfBusy() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
            let load = text.split(separator: " ").first.flatMap({ Double($0) }), load > 0.5 * Double(cores)
        else { return }
        note("load average \(load) on \(cores) cores before starting: other work will skew the figures")
    }

    static func note(_ text: String) {
        FileHandle.standardError.write(Data("ledgerbench: \(text)\n".utf8))
    }
}
