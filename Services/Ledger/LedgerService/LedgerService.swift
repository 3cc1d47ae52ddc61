public import Config
import Foundation
public import Lifecycle
import Model
import Observability
import SQLite
public import ServiceRuntime
import Wire

/// The ledger service: its RPC methods, its parts and its configuration defaults.
public enum LedgerService {
    /// The protobuf service name; methods are "\(serviceName)/Method".
    public static let serviceName = LedgerRPC.service
    public static let healthMethod = LedgerRPC.health.name
    public static let defaultRPCListen = "127.0.0.1:7002"
    public static let defaultHTTPListen = "127.0.0.1:8002"
    public static let defaultSQLitePath = "ledger.sqlite"

    /// Builds the ledger from the environment: `LEDGER_STORE` (`sqlite`, the default, on
    /// `LEDGER_SQLITE_PATH`; or `postgres` on `LEDGER_POSTGRES_URL`), `LEDGER_TRANSFER_POLICY`
    /// (`transfer`, `keep` or `refuse`). Migrates the schema before serving. Throws
    /// `ConfigError` naming a bad variable or a database that cannot be opened.
    public static func make(environment: EnvironmentReader, signal: ShutdownSignal) async throws -> ServiceHost {
        let host = try ServiceHost(
            name: "ledger", healthMethod: healthMethod, defaultRPC: defaultRPCListen, defaultHTTP: defaultHTTPListen,
            environment: environment, signal: signal)
        let database = try openDatabase(
            environment: environment, logger: host.logger, counters: CommitCounters(registry: host.metrics))
        do {
            try await database.migrate()
        } catch {
            throw ConfigError(variable: "LEDGER_STORE", problem: "cannot migrate the database: \(error)")
        }
        let policyName = try environment.choice(
            "LEDGER_TRANSFER_POLICY", default: "transfer", choices: ["transfer", "keep", "refuse"])
        let policy: TransferPolicy = policyName == "keep" ? .keep : policyName == "refuse" ? .refuse : .transfer
        let ledger = Ledger(
            database: database, defaultTransferPolicy: policy,
            now: { [clock = host.clock] in clock.epochMilliseconds() },
            leaseNow: { [clock = host.clock] in clock.machineEpochMilliseconds() })
        LedgerMethods.register(on: host.router, ledger: ledger, metrics: host.metrics, logger: host.logger)
        let backlog = LedgerBacklogMetrics(ledger: ledger)
        host.metrics.addCollector { text in backlog.write(into: &text) }
        host.add(AccessRulesPass(ledger: ledger, logger: host.logger))
        return host
    }

    static func openDatabase(
        environment: EnvironmentReader, logger: Logger, counters: CommitCounters
    ) throws -> any LedgerDatabase {
        let store = try environment.choice("LEDGER_STORE", default: "sqlite", choices: ["sqlite", "postgres"])
        if store == "postgres" {
            guard let url = environment.raw("LEDGER_POSTGRES_URL") else {
                throw ConfigError(variable: "LEDGER_POSTGRES_URL", problem: "is required when LEDGER_STORE=postgres")
            }
            let size = try environment.int("LEDGER_POSTGRES_POOL", default: 4, range: 1...64)
            do {
                let database = try PostgresLedgerDatabase(url: url, poolSize: size, counters: counters)
                logger.info("database open", ["engine": "postgres"])
                return database
            } catch {
                // The URL may hold a password: the engine's errors never repeat it.
                throw ConfigError(variable: "LEDGER_POSTGRES_URL", problem: "\(error)")
            }
        }
        let path = environment.string("LEDGER_SQLITE_PATH", default: defaultSQLitePath)
        do {
            let database = try SQLiteLedgerDatabase(path: path, counters: counters)
            logger.info("database open", ["engine": "sqlite", "path": path, "journal_mode": database.journalMode])
            return database
        } catch {
            throw ConfigError(variable: "LEDGER_SQLITE_PATH", problem: "\(error)")
        }
    }
}
