public import Config
public import Lifecycle
public import ServiceRuntime

/// The entitlement service: its RPC methods, its parts and its configuration defaults.
public enum EntitlementService {
    /// The protobuf service name; methods are "\(serviceName)/Method".
    public static let serviceName = "subscriptions.entitlement.v1.Entitlement"
    public static let healthMethod = "\(serviceName)/Health"
    public static let defaultRPCListen = "127.0.0.1:7003"
    public static let defaultHTTPListen = "127.0.0.1:8003"

    /// Builds the entitlement from the environment, with its client of the ledger (`LEDGER_ADDR`);
    /// it is ready once the ledger answers. Throws `ConfigError` naming a bad variable.
    public static func make(environment: EnvironmentReader, signal: ShutdownSignal) throws -> ServiceHost {
        let host = try ServiceHost(
            name: "entitlement", healthMethod: healthMethod, defaultRPC: defaultRPCListen,
            defaultHTTP: defaultHTTPListen,
            environment: environment, signal: signal)
        _ = try host.ledgerDependency(environment: environment)
        return host
    }
}
