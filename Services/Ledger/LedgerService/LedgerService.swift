public import Config
public import Lifecycle
public import ServiceRuntime

/// The ledger service: its RPC methods, its parts and its configuration defaults.
public enum LedgerService {
    /// The protobuf service name; methods are "\(serviceName)/Method".
    public static let serviceName = "subscriptions.ledger.v1.Ledger"
    public static let healthMethod = "\(serviceName)/Health"
    public static let defaultRPCListen = "127.0.0.1:7002"
    public static let defaultHTTPListen = "127.0.0.1:8002"

    /// Builds the ledger from the environment. Throws `ConfigError` naming a bad variable.
    public static func make(environment: EnvironmentReader, signal: ShutdownSignal) throws -> ServiceHost {
        try ServiceHost(
            name: "ledger", healthMethod: healthMethod, defaultRPC: defaultRPCListen, defaultHTTP: defaultHTTPListen,
            environment: environment, signal: signal)
    }
}
