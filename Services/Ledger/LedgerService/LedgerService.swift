public import Config
import Foundation
public import Lifecycle
import Observability
import SQLite
public import ServiceRuntime

/// The ledger service: its RPC methods, its parts and its configuration defaults.
public enum LedgerService {
    /// The protobuf service name; methods are "\(serviceName)/Method".
    public static let serviceName = "subscriptions.ledger.v1.Ledger"
    public static let healthMethod = "\(serviceName)/Health"
    public static let defaultRPCListen = "127.0.0.1:7002"
    public static let defaultHTTPListen = "127.0.0.1:8002"
    public static let defaultSQLitePath = "ledger.sqlite"

    /// Builds the ledger from the environment: opens its SQLite file (`LEDGER_SQLITE_PATH`,
    /// created if missing) in WAL mode with `synchronous=FULL`. Throws `ConfigError` naming a
    /// bad variable or a database that cannot be opened.
    public static func make(environment: EnvironmentReader, signal: ShutdownSignal) throws -> ServiceHost {
        let host = try ServiceHost(
            name: "ledger", healthMethod: healthMethod, defaultRPC: defaultRPCListen, defaultHTTP: defaultHTTPListen,
            environment: environment, signal: signal)
        let path = environment.string("LEDGER_SQLITE_PATH", default: defaultSQLitePath)
        let database: SQLiteDatabase
        do {
            database = try SQLiteDatabase(path: path)
        } catch {
            throw ConfigError(variable: "LEDGER_SQLITE_PATH", problem: error.message)
        }
        host.logger.info("database open", ["path": path, "journal_mode": database.journalMode])
        host.addReadinessCheck("database") { (try? database.scalarInt("SELECT 1")) == 1 }
        return host
    }
}
