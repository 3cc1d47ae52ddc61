import AppStore
import Clients
public import Config
import Foundation
import GooglePlay
import HTTP
import HTTPClient
public import Lifecycle
import Observability
public import RPC
public import ServiceRuntime
import Wire

/// The verifier service: its RPC methods, its parts and its configuration defaults.
public enum VerifierService {
    /// The protobuf service name; methods are "\(serviceName)/Method".
    public static let serviceName = VerifierRPC.service
    public static let healthMethod = VerifierRPC.health.name
    public static let defaultRPCListen = "127.0.0.1:7001"
    public static let defaultHTTPListen = "127.0.0.1:8001"

    /// Builds the verifier from the environment, with its client of the ledger (`LEDGER_ADDR`);
    /// it is ready once the ledger answers. The Apple adapter runs when `VERIFIER_STORES` names
    /// `apple` (or, unset, when `APPLE_BUNDLE_ID` is): see `AppleSettings` for its variables.
    /// Throws `ConfigError` naming a bad variable.
    public static func make(environment: EnvironmentReader, signal: ShutdownSignal) throws -> ServiceHost {
        try make(environment: environment, signal: signal, ledger: nil)
    }

    /// As `make(environment:signal:)`, with `ledger` in place of a client of `LEDGER_ADDR` when
    /// given (a ledger in this process, through `InProcessTransport`).
    public static func make(
        environment: EnvironmentReader, signal: ShutdownSignal, ledger ledgerTransport: (any ClientTransport)?
    )
        throws -> ServiceHost
    {
        let admission = try NotificationAdmission.Limits(environment: environment)
        let host = try ServiceHost(
            name: "verifier", healthMethod: healthMethod, defaultRPC: defaultRPCListen, defaultHTTP: defaultHTTPListen,
            environment: environment, signal: signal)
        let ledger = LedgerClient(try host.ledgerDependency(environment: environment, transport: ledgerTransport))
        let rate = try environment.int("NOTIFY_RATE_PER_ADDRESS", default: 100, range: 0...1_000_000)
        let ingress = NotificationIngressGuard(
            rate: rate == 0 ? nil : Double(rate),
            burst: Double(try environment.int("NOTIFY_BURST_PER_ADDRESS", default: 200, range: 1...1_000_000)),
            clock: host.clock)
        host.metrics.addCollector { text in ingress.writeMetrics(into: &text) }
        host.ops?.route("GET", "/rejected") { _ in ingress.samplesResponse() }
        var apple: AppleAdapter?
        if try AppleSettings.isEnabled(environment) {
            let settings = try AppleSettings(environment: environment)
            let adapter = try makeAppleAdapter(
                settings, ledger: ledger, host: host, ingress: ingress, admission: admission)
            adapter.installNotificationRoutes(on: host.http)
            host.add(AppleReconciler(adapter: adapter, interval: settings.reconcileInterval, clock: host.clock))
            host.logger.info(
                "apple adapter on",
                [
                    "bundle_id": settings.bundleID,
                    "environments": settings.environments.map(\.rawValue).joined(separator: ","),
                ])
            apple = adapter
        }
        var google: GoogleAdapter?
        if try GoogleSettings.isEnabled(environment) {
            let settings = try GoogleSettings(environment: environment)
            let (adapter, authenticator) = try makeGoogleAdapter(
                settings, ledger: ledger, host: host, ingress: ingress, admission: admission)
            adapter.installNotificationRoute(on: host.http, authenticator: authenticator)
            host.add(GoogleReconciler(adapter: adapter, interval: settings.reconcileInterval, clock: host.clock))
            host.logger.info("google play adapter on", ["packages": settings.packages.sorted().joined(separator: ",")])
            google = adapter
        }
        VerifierMethods.register(on: host.router, apple: apple, google: google)
        VerifierMethods.registerFind(on: host.router, ledger: ledger, apple: apple, logger: host.logger)
        return host
    }

    static func makeGoogleAdapter(
        _ settings: GoogleSettings, ledger: any LedgerClientProtocol, host: ServiceHost,
        ingress: NotificationIngressGuard, admission: NotificationAdmission.Limits
    ) throws
        -> (GoogleAdapter, PubSubPushAuthenticator)
    {
        let account: GoogleServiceAccount
        do {
            account = try GoogleServiceAccount(contentsOfFile: settings.serviceAccountPath)
        } catch {
            throw ConfigError(variable: "GOOGLE_SERVICE_ACCOUNT_FILE", problem: error.message)
        }
        var configuration = GooglePlayDeveloperAPIClient.Configuration(serviceAccount: account)
        configuration.baseURL = settings.apiURL
        configuration.tokenURL = settings.tokenURL
        configuration.requestTimeout = settings.apiTimeout
        configuration.now = host.machineDate
        configuration.sleep = { [clock = host.clock] in try await clock.sleep(for: $0) }
        // Timed on the machine's clock: an exchange takes real time whatever the service's clock says.
        configuration.metrics = StoreAPIMetrics(
            registry: host.metrics, store: "google", endpoints: GooglePlayAPIEndpoint.allCases.map(\.rawValue))
        let client: GooglePlayDeveloperAPIClient
        do {
            client = try GooglePlayDeveloperAPIClient(configuration: configuration)
        } catch {
            throw ConfigError(variable: "GOOGLE_API_URL", problem: error.message)
        }
        let keys: PubSubPushAuthenticator.KeySource
        if settings.jwks.hasPrefix("https://") || settings.jwks.hasPrefix("http://"),
            let url = URL(string: settings.jwks)
        {
            keys = .url(url)
        } else {
            keys = .file(settings.jwks)
        }
        let authenticator = PubSubPushAuthenticator(
            configuration: .init(
                audience: settings.pushAudience, serviceAccountEmail: settings.pushServiceAccount, keySource: keys))
        let adapter = GoogleAdapter(
            catalog: settings.catalog, api: client, ledger: ledger, now: host.date, machineNow: host.machineDate,
            logger: host.logger,
            metrics: host.metrics, admission: admission, ingress: ingress)
        return (adapter, authenticator)
    }

    static func makeAppleAdapter(
        _ settings: AppleSettings, ledger: any LedgerClientProtocol, host: ServiceHost,
        ingress: NotificationIngressGuard, admission: NotificationAdmission.Limits
    ) throws
        -> AppleAdapter
    {
        var configuration: AppStoreServerAPIClient.Configuration
        do {
            configuration = AppStoreServerAPIClient.Configuration(
                keyID: settings.keyID, issuerID: settings.issuerID, bundleID: settings.bundleID,
                privateKey: try AppStoreServerAPIClient.Configuration.loadPrivateKey(p8Path: settings.privateKeyPath))
        } catch {
            throw ConfigError(variable: "APPLE_PRIVATE_KEY_FILE", problem: error.message)
        }
        configuration.productionBaseURL = settings.productionAPI
        configuration.sandboxBaseURL = settings.sandboxAPI
        configuration.fallBackToOtherEnvironment = settings.askOtherEnvironment
        configuration.requestTimeout = settings.apiTimeout
        configuration.now = host.machineDate
        configuration.sleep = { [clock = host.clock] in try await clock.sleep(for: $0) }
        configuration.metrics = StoreAPIMetrics(
            registry: host.metrics, store: "apple", endpoints: AppStoreAPIEndpoint.allCases.map(\.rawValue))
        let client: AppStoreServerAPIClient
        do {
            client = try AppStoreServerAPIClient(configuration: configuration)
        } catch {
            throw ConfigError(variable: "APPLE_KEY_ID", problem: error.message)
        }
        return AppleAdapter(
            verifiers: try settings.verifiers(), api: client, ledger: ledger, tokenNamespace: settings.tokenNamespace,
            revocation: try settings.revocationChecker(), now: host.date, machineNow: host.machineDate,
            logger: host.logger, metrics: host.metrics, admission: admission, ingress: ingress,
            consumptionPolicy: settings.consumptionPolicy)
    }
}
