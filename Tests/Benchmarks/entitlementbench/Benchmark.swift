import BenchSupport
import Foundation
import Glibc

/// One run: the empty view's memory, seeding, the loaded view's start and memory, CheckAccess
/// load beside redis-benchmark, propagation; then the report. Every process and temporary
/// directory it made is removed, also when it fails.
struct Benchmark {
    /// One load shape and the request count that makes it take a few seconds on a 2-core machine.
    struct Configuration {
        let clients: Int
        let pipeline: Int
        let requests: Int
    }

    static let configurations = [
        Configuration(clients: 1, pipeline: 1, requests: 50_000),
        Configuration(clients: 50, pipeline: 1, requests: 300_000),
        Configuration(clients: 1, pipeline: 16, requests: 750_000),
        Configuration(clients: 50, pipeline: 16, requests: 3_500_000),
    ]
    /// How long after ready the resident memory is read (the snapshot's buffers are freed by then).
    static let settle: Duration = .seconds(1)

    let options: BenchOptions

    /// Runs everything and prints the table and, last, the JSON line. Returns the number of
    /// calls that failed under load. Throws when a process cannot be started or a phase breaks.
    func run() throws(BenchError) -> Int {
        BenchCommand.warnIfBusy("entitlementbench")
        let directory = try TemporaryDirectory("entitlementbench")
        defer { directory.remove() }
        let policyPath = try directory.write("policy.conf", PurchaseWorkload.policy)
        let emptyDatabasePath = directory.file("empty.sqlite")
        let databasePath = options.databasePath ?? directory.file("ledger.sqlite")
        let reused = options.databasePath.map { FileManager.default.fileExists(atPath: $0) } ?? false
        let ledgerSettings = ["LEDGER_STORE": "sqlite", "LEDGER_SQLITE_PATH": databasePath]
        let workload = PurchaseWorkload(months: options.months, periodRows: options.writesPeriodRows)
        let checkpointPath = directory.file("view.checkpoint")

        // The ledger migrates an empty database; the view over it is the memory baseline.
        var ledger = try LedgerProcess(
            executable: options.ledgerPath,
            settings: ["LEDGER_STORE": "sqlite", "LEDGER_SQLITE_PATH": emptyDatabasePath],
            directory: directory.path)
        let empty = try startEntitlement(ledger: ledger, policyPath: policyPath, checkpoint: nil, directory: directory)
        let emptyMemory = try residentAfterSettling(empty)
        Self.note(
            "empty view: ready in \(ReportText.fixed(empty.secondsToReady, 3)) s, \(emptyMemory.bytes) bytes resident")
        BenchCommand.noteUncleanExit("entitlementbench", empty.stop(), of: options.entitlementPath)
        BenchCommand.noteUncleanExit("entitlementbench", ledger.stop(), of: options.ledgerPath)

        var seed = LedgerSeed(accounts: options.accounts, workload: workload)
        if reused {
            Self.note("using the seeded database \(databasePath)")
            try seed.readSample(from: databasePath)
        } else {
            // Migrated by the ledger as a fresh one would be, then seeded.
            let migrating = try LedgerProcess(
                executable: options.ledgerPath, settings: ledgerSettings, directory: directory.path)
            BenchCommand.noteUncleanExit("entitlementbench", migrating.stop(), of: options.ledgerPath)
            Self.note("seeding \(options.accounts) accounts")
            try seed.write(to: databasePath)
        }
        Self.note(
            "seeded \(options.accounts) accounts with \(seed.periods) periods (raw "
                + "\(seed.periods == 0 ? 0 : seed.rawBytes / seed.periods) bytes each on average) "
                + (reused ? "by an earlier run" : "in \(ReportText.fixed(seed.seconds, 1)) s"))

        ledger = try LedgerProcess(executable: options.ledgerPath, settings: ledgerSettings, directory: directory.path)
        defer { ledger.stop() }
        if options.httpOnly {
            return try runHTTPOnly(ledger: ledger, policyPath: policyPath, seed: seed, directory: directory)
        }
        // A cold start: nothing of the database in the page cache, as on a ledger host whose
        // pages the seeding (or a while of other work) has left behind.
        let databaseFiles = [databasePath, databasePath + "-wal"]
        let cachedBefore = databaseFiles.compactMap { PageCacheEviction.residentBytes(of: $0) }.reduce(0, +)
        let eviction = try PageCacheEviction.evict(databaseFiles)
        let cachedAfter = databaseFiles.compactMap { PageCacheEviction.residentBytes(of: $0) }.reduce(0, +)
        Self.note(
            "page cache emptied by \(eviction.rawValue): \(cachedBefore / 1_048_576) MiB of the database cached "
                + "before, \(cachedAfter / 1_048_576) MiB after")
        let (first, startCPU) = try timedStart(
            ledger: ledger, policyPath: policyPath, checkpoint: checkpointPath, directory: directory)
        defer { first.stop() }
        let viewAccounts = try first.viewAccounts()
        let loadedMemory = try residentAfterSettling(first)
        Self.note(
            "loaded view: \(viewAccounts) accounts, ready in \(ReportText.fixed(first.secondsToReady, 3)) s, "
                + "\(loadedMemory.bytes) bytes resident (peak \(loadedMemory.peakBytes)); CPU s until ready: ledger "
                + "\(startCPU.ledgerSeconds.map { ReportText.fixed($0, 2) } ?? "?"), entitlement "
                + "\(startCPU.entitlementSeconds.map { ReportText.fixed($0, 2) } ?? "?"); ledger read "
                + "\(startCPU.ledgerReadBytes.map { "\($0 / 1_048_576) MiB" } ?? "?") from storage")
        guard viewAccounts == seed.linkedAccounts else {
            throw BenchError("the view holds \(viewAccounts) accounts, not the \(seed.linkedAccounts) in the database")
        }
        // A second instance beside the first, as a deploy or a scale-out starts one: the ledger
        // is running, and the tables the first start read from disk are in its page cache.
        let (second, secondCPU) = try timedStart(
            ledger: ledger, policyPath: policyPath, checkpoint: nil, directory: directory)
        Self.note(
            "second instance: ready in \(ReportText.fixed(second.secondsToReady, 3)) s; CPU s until ready: ledger "
                + "\(secondCPU.ledgerSeconds.map { ReportText.fixed($0, 2) } ?? "?"), entitlement "
                + "\(secondCPU.entitlementSeconds.map { ReportText.fixed($0, 2) } ?? "?"); ledger read "
                + "\(secondCPU.ledgerReadBytes.map { "\($0 / 1_048_576) MiB" } ?? "?") from storage")
        BenchCommand.noteUncleanExit("entitlementbench", second.stop(), of: options.entitlementPath)

        // The first instance stops, writing its checkpoint, and starts again on it.
        let stopStart = MonotonicTime.nanoseconds()
        BenchCommand.noteUncleanExit("entitlementbench", first.stop(), of: options.entitlementPath)
        let stopSeconds = Double(MonotonicTime.nanoseconds() - stopStart) / 1e9
        guard let fileBytes = (try? FileManager.default.attributesOfItem(atPath: checkpointPath))?[.size] as? Int else {
            throw BenchError("the stopped service wrote no checkpoint at \(checkpointPath) (its log is above)")
        }
        let (entitlement, restartCPU) = try timedStart(
            ledger: ledger, policyPath: policyPath, checkpoint: checkpointPath, directory: directory)
        defer { entitlement.stop() }
        let restartAccounts = try entitlement.viewAccounts()
        guard restartAccounts == seed.linkedAccounts else {
            throw BenchError(
                "the view from the checkpoint holds \(restartAccounts) accounts, not \(seed.linkedAccounts)")
        }
        let checkpoint = CheckpointRestart(
            stopSeconds: stopSeconds, fileBytes: fileBytes, readySeconds: entitlement.secondsToReady, cpu: restartCPU,
            memory: try residentAfterSettling(entitlement))
        Self.note(
            "from the checkpoint (\(fileBytes) bytes, written in a stop of \(ReportText.fixed(stopSeconds, 2)) s): "
                + "ready in \(ReportText.fixed(entitlement.secondsToReady, 3)) s, \(checkpoint.memory.bytes) bytes resident"
        )

        let redis = options.skipRedis ? nil : try RedisServer()
        defer { redis?.stop() }
        let load = try CheckAccessLoad(port: entitlement.port, accounts: seed.sample)
        var rows: [LoadRow] = []
        var errors = CallFailures()
        for configuration in Self.configurations {
            let requests = max(
                configuration.clients * configuration.pipeline,
                Int((Double(configuration.requests) * options.requestsScale).rounded()))
            var row: LoadRow
            do {
                row = try measure(
                    configuration, requests: requests, load: load, entitlement: entitlement, errors: &errors)
            } catch {
                guard entitlement.child.waitForExit(within: .milliseconds(500)) else { throw error }
                throw BenchError("\(error); \(options.entitlementPath) has exited (its log is above)")
            }
            if let redis {
                row.redis = try RedisBenchmark.run(
                    port: redis.port, clients: configuration.clients, pipeline: configuration.pipeline,
                    requests: requests)
            }
            Self.note(
                "clients \(row.clients) pipeline \(row.pipeline): \(Int(row.callsPerSecond)) CheckAccess/s"
                    + (row.redis.map { ", redis \(Int($0.opsPerSecond)) GET/s" } ?? ""))
            rows.append(row)
        }
        redis?.stop()
        // The same calls over HTTP, as a backend without our framing makes them.
        let http = try httpComparison(entitlement, seed: seed, directory: directory)

        let probe = PropagationProbe(
            ledgerPort: ledger.port, entitlementPort: entitlement.port, workload: workload, runID: "eb\(getpid())")
        var propagation = try probe.run(samples: options.propagationSamples)
        Self.note("propagation: \(options.propagationSamples) purchases, \(propagation.checks) checks while waiting")

        BenchCommand.noteUncleanExit("entitlementbench", entitlement.stop(), of: options.entitlementPath)
        BenchCommand.noteUncleanExit("entitlementbench", ledger.stop(), of: options.ledgerPath)
        if let first = errors.first { Self.note("\(errors.count) calls failed; the first: \(first)") }
        let report = Report(
            accounts: options.accounts, seedSeconds: seed.seconds, seededPeriods: seed.periods, months: options.months,
            seededRawBytes: seed.rawBytes, readySeconds: first.secondsToReady,
            startCPU: startCPU, eviction: eviction, secondReadySeconds: second.secondsToReady,
            secondStartCPU: secondCPU,
            checkpoint: checkpoint,
            emptyMemory: emptyMemory, loadedMemory: loadedMemory, rows: rows, http: http,
            propagationSamples: options.propagationSamples,
            propagationP50Milliseconds: propagation.latencies.milliseconds(percentile: 0.50),
            propagationP99Milliseconds: propagation.latencies.milliseconds(percentile: 0.99),
            propagationMaxMilliseconds: propagation.maxMilliseconds, errors: errors.count + http.failed)
        print(report.table)
        print(report.json)
        return errors.count + http.failed
    }

    /// `--http-only`: one service on the seeded ledger, CheckAccess over HTTP beside nginx, and
    /// a table and JSON line of those figures alone.
    private func runHTTPOnly(
        ledger: LedgerProcess, policyPath: String, seed: LedgerSeed, directory: TemporaryDirectory
    ) throws(BenchError) -> Int {
        let entitlement = try startEntitlement(
            ledger: ledger, policyPath: policyPath, checkpoint: nil, directory: directory)
        defer { entitlement.stop() }
        let http = try httpComparison(entitlement, seed: seed, directory: directory)
        BenchCommand.noteUncleanExit("entitlementbench", entitlement.stop(), of: options.entitlementPath)
        BenchCommand.noteUncleanExit("entitlementbench", ledger.stop(), of: options.ledgerPath)
        let header = ["figure", "ours", "reference", "ratio", "target", "verdict"]
        print(ReportText.table([header] + http.lines))
        let fields = [("benchmark", "\"entitlement-http\""), ("accounts", "\(options.accounts)")] + http.fields
        print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
        return http.failed
    }

    /// CheckAccess over HTTP beside nginx, 5 s per load (times --requests-scale, at least 2 s).
    private func httpComparison(
        _ entitlement: EntitlementProcess, seed: LedgerSeed, directory: TemporaryDirectory
    ) throws(BenchError) -> HTTPComparison {
        let http = try HTTPComparison.run(
            port: entitlement.httpPort, accounts: seed.sample,
            seconds: max(2, Int((5 * options.requestsScale).rounded())), directory: directory)
        Self.note(
            "CheckAccess over HTTP (JSON, keep-alive, \(HTTPCheckAccess.connections) connections): "
                + "\(Int(http.ours.callsPerSecond))/s, p99 \(ReportText.fixed(http.ours.p99Milliseconds, 3)) ms; "
                + "nginx \(Int(http.nginx.callsPerSecond))/s, p99 \(ReportText.fixed(http.nginx.p99Milliseconds, 3)) ms "
                + "(ratio \(ReportText.fixed(http.ratio, 2))); at half rate p99 "
                + "\(ReportText.fixed(http.halfRate.p99Milliseconds, 3)) ms")
        return http
    }

    /// Starts an entitlement service and says where its start went: the ledger's CPU building and
    /// sending the snapshot and the bytes it read from storage, the service's receiving and
    /// loading it.
    private func timedStart(
        ledger: LedgerProcess, policyPath: String, checkpoint: String?, directory: TemporaryDirectory
    ) throws(BenchError) -> (EntitlementProcess, StartCPU) {
        let ledgerCPUBefore = ProcessCPU.seconds(pid: ledger.child.pid)
        let ledgerReadBefore = ProcessReads.bytes(pid: ledger.child.pid)
        let entitlement = try startEntitlement(
            ledger: ledger, policyPath: policyPath, checkpoint: checkpoint, directory: directory)
        let cpu = StartCPU(
            ledgerSeconds: ProcessCPU.seconds(pid: ledger.child.pid).flatMap { after in
                ledgerCPUBefore.map { after - $0 }
            },
            entitlementSeconds: ProcessCPU.seconds(pid: entitlement.child.pid),
            ledgerReadBytes: ProcessReads.bytes(pid: ledger.child.pid).flatMap { after in
                ledgerReadBefore.map { after - $0 }
            })
        return (entitlement, cpu)
    }

    private func startEntitlement(
        ledger: LedgerProcess, policyPath: String, checkpoint: String?, directory: TemporaryDirectory
    ) throws(BenchError) -> EntitlementProcess {
        try EntitlementProcess(
            executable: options.entitlementPath, ledgerPort: ledger.port, policyPath: policyPath,
            checkpointPath: checkpoint, directory: directory.path, limit: .seconds(Int64(options.readyLimitSeconds)))
    }

    private func residentAfterSettling(_ service: EntitlementProcess) throws(BenchError) -> ProcessMemory.Resident {
        usleep(UInt32(Self.settle.components.seconds) * 1_000_000)
        guard let memory = ProcessMemory.resident(pid: service.child.pid) else {
            throw BenchError("cannot read /proc/\(service.child.pid)/status of \(options.entitlementPath)")
        }
        return memory
    }

    /// Warms up, then measures one configuration; adds failed calls to `errors`.
    private func measure(
        _ configuration: Configuration, requests: Int, load: CheckAccessLoad, entitlement: EntitlementProcess,
        errors: inout CallFailures
    ) throws(BenchError) -> LoadRow {
        let generator = try load.generator(clients: configuration.clients, pipeline: configuration.pipeline)
        var run = try generator.measure(requests: requests, serverPID: entitlement.child.pid)
        errors.add(run)
        return LoadRow(
            clients: configuration.clients, pipeline: configuration.pipeline, requests: requests,
            callsPerSecond: run.callsPerSecond, p50Milliseconds: run.milliseconds(percentile: 0.50),
            p99Milliseconds: run.milliseconds(percentile: 0.99), serverCores: run.serverCores,
            generatorCores: run.generatorCores)
    }

    static func note(_ text: String) { BenchCommand.note("entitlementbench", text) }
}
