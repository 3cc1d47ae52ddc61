public import AppStore
public import Config
public import Crypto
public import Foundation

/// The Apple adapter's configuration, read from the environment:
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `APPLE_BUNDLE_ID` | (required) | the app's bundle id |
/// | `APPLE_ENVIRONMENTS` | `Production,Sandbox` | which environments to serve, each at `/apple/notifications/<environment>` |
/// | `APPLE_APP_APPLE_ID` | (required with Production) | the app's Apple id |
/// | `APPLE_ROOT_CERTIFICATES` | (required) | comma-separated DER or PEM files of trust anchors; with Production each must be Apple Root CA - G3 |
/// | `APPLE_KEY_ID`, `APPLE_ISSUER_ID` | (required) | App Store Connect API key id and issuer id |
/// | `APPLE_PRIVATE_KEY_FILE` | (required) | the API key's `.p8` file |
/// | `APPLE_API_URL`, `APPLE_API_SANDBOX_URL` | Apple's | App Store Server API base URLs |
/// | `APPLE_API_OTHER_ENVIRONMENT` | `false` | on error 4040010, ask the other environment |
/// | `APPLE_RECONCILE_INTERVAL` | `1h` | how often reconciliation runs (`0` turns it off) |
/// | `APPLE_API_TIMEOUT` | `15s` | how long one store API request may take before it is retried |
/// | `APPLE_ACCOUNT_TOKEN_NAMESPACE` | a fixed UUID | namespace of name-based `appAccountToken`s |
/// | `APPLE_ONLINE_CHECKS` | `false` | check signing certificates with OCSP, and their validity at the current time |
/// | `APPLE_CONSUMPTION_POLICY_FILE` | none | JSON `AppleConsumptionPolicy`: answer CONSUMPTION_REQUEST by itself |
public struct AppleSettings: Sendable {
    /// Apple Root CA - G3's SHA-256 fingerprint: the only anchor Production data chains to.
    public static let appleRootG3Fingerprint = "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179"
    /// The default namespace for name-based account tokens.
    public static let defaultTokenNamespace = UUID(uuidString: "5f2b8c1e-7a43-4d0b-9c1a-6e3f2d8b4a70")!

    public var bundleID: String
    public var environments: [AppleEnvironment]
    public var appAppleID: Int64?
    public var anchors: [X509Certificate]
    public var keyID: String
    public var issuerID: String
    public var privateKeyPath: String
    public var productionAPI: URL
    public var sandboxAPI: URL
    public var askOtherEnvironment: Bool
    public var reconcileInterval: Duration
    /// How long one store API request may take (`APPLE_API_TIMEOUT`).
    public var apiTimeout: Duration
    public var tokenNamespace: UUID
    public var onlineChecks: Bool
    /// How CONSUMPTION_REQUEST is answered without an operator (`APPLE_CONSUMPTION_POLICY_FILE`).
    public var consumptionPolicy: AppleConsumptionPolicy?

    /// Whether `environment` asks for the Apple adapter: `VERIFIER_STORES` names `apple`, or it
    /// is unset and `APPLE_BUNDLE_ID` is.
    public static func isEnabled(_ environment: EnvironmentReader) throws(ConfigError) -> Bool {
        guard let stores = environment.raw("VERIFIER_STORES") else { return environment.raw("APPLE_BUNDLE_ID") != nil }
        let names = stores.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        for name in names where !["apple", "google", ""].contains(name) {
            throw ConfigError(variable: "VERIFIER_STORES", problem: "\"\(name)\" is not a store (apple, google)")
        }
        return names.contains("apple")
    }

    /// Reads and checks everything; throws `ConfigError` naming the first bad variable.
    public init(environment: EnvironmentReader) throws(ConfigError) {
        func required(_ name: String) throws(ConfigError) -> String {
            guard let value = environment.raw(name), !value.isEmpty else {
                throw ConfigError(variable: name, problem: "is required for the Apple adapter")
            }
            return value
        }
        bundleID = try required("APPLE_BUNDLE_ID")
        var environments: [AppleEnvironment] = []
        for name in environment.string("APPLE_ENVIRONMENTS", default: "Production,Sandbox").split(separator: ",") {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard
                let parsed = AppleEnvironment.allCases.first(where: { $0.rawValue.lowercased() == trimmed.lowercased() }
                ),
                parsed == .production || parsed == .sandbox
            else {
                throw ConfigError(
                    variable: "APPLE_ENVIRONMENTS", problem: "\"\(trimmed)\" is not Production or Sandbox")
            }
            if !environments.contains(parsed) { environments.append(parsed) }
        }
        guard !environments.isEmpty else {
            throw ConfigError(variable: "APPLE_ENVIRONMENTS", problem: "names no environment")
        }
        self.environments = environments
        if let text = environment.raw("APPLE_APP_APPLE_ID") {
            guard let id = Int64(text), id > 0 else {
                throw ConfigError(
                    variable: "APPLE_APP_APPLE_ID", problem: "expected a positive number, got \"\(text)\"")
            }
            appAppleID = id
        } else if environments.contains(.production) {
            throw ConfigError(
                variable: "APPLE_APP_APPLE_ID", problem: "is required when APPLE_ENVIRONMENTS has Production")
        }
        var anchors: [X509Certificate] = []
        for path in try required("APPLE_ROOT_CERTIFICATES").split(separator: ",") {
            let path = path.trimmingCharacters(in: .whitespaces)
            guard let bytes = FileManager.default.contents(atPath: path) else {
                throw ConfigError(variable: "APPLE_ROOT_CERTIFICATES", problem: "cannot read \(path)")
            }
            do {
                if let text = String(data: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                    anchors += try X509Certificate.loadPEMChain(path: path)
                } else {
                    anchors.append(try X509Certificate(der: [UInt8](bytes)))
                }
            } catch {
                throw ConfigError(
                    variable: "APPLE_ROOT_CERTIFICATES", problem: "\(path) is not a certificate: \(error)")
            }
        }
        if environments.contains(.production) {
            for anchor in anchors where anchor.sha256Fingerprint != Self.appleRootG3Fingerprint {
                throw ConfigError(
                    variable: "APPLE_ROOT_CERTIFICATES",
                    problem:
                        "with Production every anchor must be Apple Root CA - G3 (SHA-256 \(Self.appleRootG3Fingerprint)); one has \(anchor.sha256Fingerprint)"
                )
            }
        }
        self.anchors = anchors
        keyID = try required("APPLE_KEY_ID")
        issuerID = try required("APPLE_ISSUER_ID")
        privateKeyPath = try required("APPLE_PRIVATE_KEY_FILE")
        productionAPI = try environment.httpURL("APPLE_API_URL", default: "https://api.storekit.apple.com")
        sandboxAPI = try environment.httpURL("APPLE_API_SANDBOX_URL", default: "https://api.storekit-sandbox.apple.com")
        askOtherEnvironment = try environment.bool("APPLE_API_OTHER_ENVIRONMENT", default: false)
        reconcileInterval = try environment.duration(
            "APPLE_RECONCILE_INTERVAL", default: .seconds(3600), range: .zero...(.seconds(7 * 86_400)))
        apiTimeout = try environment.duration(
            "APPLE_API_TIMEOUT", default: .seconds(15), range: .milliseconds(100)...(.seconds(300)))
        let namespace = environment.string(
            "APPLE_ACCOUNT_TOKEN_NAMESPACE", default: Self.defaultTokenNamespace.uuidString)
        guard let parsed = UUID(uuidString: namespace) else {
            throw ConfigError(variable: "APPLE_ACCOUNT_TOKEN_NAMESPACE", problem: "\"\(namespace)\" is not a UUID")
        }
        tokenNamespace = parsed
        onlineChecks = try environment.bool("APPLE_ONLINE_CHECKS", default: false)
        consumptionPolicy = nil
        if let path = environment.raw("APPLE_CONSUMPTION_POLICY_FILE"), !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(variable: "APPLE_CONSUMPTION_POLICY_FILE", problem: "cannot read \(path)")
            }
            do throws(AppleConsumptionPolicy.PolicyError) {
                consumptionPolicy = try AppleConsumptionPolicy.parse(data)
            } catch {
                throw ConfigError(variable: "APPLE_CONSUMPTION_POLICY_FILE", problem: "\(path) " + error.problem)
            }
        }
    }

    /// One signed-data verifier per served environment.
    public func verifiers() throws(ConfigError) -> [AppleEnvironment: AppleSignedDataVerifier] {
        var verifiers: [AppleEnvironment: AppleSignedDataVerifier] = [:]
        for environment in environments {
            do {
                var configuration = AppleSignedDataVerifier.Configuration(
                    bundleID: bundleID, environment: environment, appAppleID: appAppleID)
                configuration.validateAtCurrentTime = onlineChecks
                verifiers[environment] = try AppleSignedDataVerifier(anchors: anchors, configuration: configuration)
            } catch {
                throw ConfigError(variable: "APPLE_ROOT_CERTIFICATES", problem: "\(error)")
            }
        }
        return verifiers
    }
}

extension AppleSettings {
    /// The OCSP checker when `APPLE_ONLINE_CHECKS` is on.
    public func revocationChecker() throws(ConfigError) -> AppleRevocationChecker? {
        guard onlineChecks else { return nil }
        do {
            return try AppleRevocationChecker(anchors: anchors)
        } catch {
            throw ConfigError(variable: "APPLE_ROOT_CERTIFICATES", problem: "\(error)")
        }
    }
}
