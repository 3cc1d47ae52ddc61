public import Config
public import Foundation

/// The Google Play adapter's configuration, read from the environment:
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `GOOGLE_PACKAGES` | (required) | the apps' package names, comma-separated |
/// | `GOOGLE_SERVICE_ACCOUNT_FILE` | (required) | the service account's JSON key |
/// | `GOOGLE_API_URL` | `https://androidpublisher.googleapis.com` | Play Developer API base URL |
/// | `GOOGLE_TOKEN_URL` | the key's `token_uri` | OAuth token endpoint |
/// | `GOOGLE_PUSH_AUDIENCE` | (required) | the audience the Pub/Sub push subscription puts in its tokens |
/// | `GOOGLE_PUSH_SERVICE_ACCOUNT` | (required) | the email of the push subscription's service account |
/// | `GOOGLE_JWKS` | Google's certificate URL | the keys push tokens are signed with: an https URL or a JWKS file |
/// | `GOOGLE_ONE_TIME_PRODUCTS` | none | product ids of one-time products (others are subscriptions) |
/// | `GOOGLE_CONSUMABLE_PRODUCTS` | none | one-time products consumed after they are recorded |
/// | `GOOGLE_RECONCILE_INTERVAL` | `1h` | how often reconciliation runs (`0` turns it off) |
/// | `GOOGLE_API_TIMEOUT` | `15s` | how long one store API request may take before it is retried |
public struct GoogleSettings: Sendable {
    public static let defaultJWKS = "https://www.googleapis.com/oauth2/v3/certs"

    public var packages: Set<String>
    public var serviceAccountPath: String
    public var apiURL: URL
    public var tokenURL: URL?
    public var pushAudience: String
    public var pushServiceAccount: String
    /// An http(s) URL, or else a file path.
    public var jwks: String
    public var oneTimeProducts: Set<String>
    public var consumableProducts: Set<String>
    public var reconcileInterval: Duration
    /// How long one store API request may take (`GOOGLE_API_TIMEOUT`).
    public var apiTimeout: Duration

    /// Whether `environment` asks for the Google adapter: `VERIFIER_STORES` names `google`, or
    /// it is unset and `GOOGLE_PACKAGES` is.
    public static func isEnabled(_ environment: EnvironmentReader) throws(ConfigError) -> Bool {
        guard let stores = environment.raw("VERIFIER_STORES") else { return environment.raw("GOOGLE_PACKAGES") != nil }
        _ = try AppleSettings.isEnabled(environment)  // validates the list
        return stores.split(separator: ",").contains {
            $0.trimmingCharacters(in: .whitespaces).lowercased() == "google"
        }
    }

    /// Reads and checks everything; throws `ConfigError` naming the first bad variable.
    public init(environment: EnvironmentReader) throws(ConfigError) {
        func required(_ name: String) throws(ConfigError) -> String {
            guard let value = environment.raw(name), !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ConfigError(variable: name, problem: "is required for the Google Play adapter")
            }
            return value
        }
        func list(_ name: String) -> Set<String> {
            Set(
                (environment.raw(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty })
        }
        _ = try required("GOOGLE_PACKAGES")
        packages = list("GOOGLE_PACKAGES")
        for package in packages
        where !package.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") }) {
            throw ConfigError(variable: "GOOGLE_PACKAGES", problem: "\"\(package)\" is not a package name")
        }
        serviceAccountPath = try required("GOOGLE_SERVICE_ACCOUNT_FILE")
        guard FileManager.default.isReadableFile(atPath: serviceAccountPath) else {
            throw ConfigError(variable: "GOOGLE_SERVICE_ACCOUNT_FILE", problem: "cannot read \(serviceAccountPath)")
        }
        apiURL = try environment.httpURL("GOOGLE_API_URL", default: "https://androidpublisher.googleapis.com")
        tokenURL = try environment.raw("GOOGLE_TOKEN_URL").map { _ throws(ConfigError) in
            try environment.httpURL("GOOGLE_TOKEN_URL", default: "")
        }
        pushAudience = try required("GOOGLE_PUSH_AUDIENCE")
        pushServiceAccount = try required("GOOGLE_PUSH_SERVICE_ACCOUNT")
        jwks = environment.string("GOOGLE_JWKS", default: Self.defaultJWKS)
        if !jwks.hasPrefix("https://") && !jwks.hasPrefix("http://"), !FileManager.default.isReadableFile(atPath: jwks)
        {
            throw ConfigError(variable: "GOOGLE_JWKS", problem: "\(jwks) is neither an http(s) URL nor a readable file")
        }
        oneTimeProducts = list("GOOGLE_ONE_TIME_PRODUCTS")
        consumableProducts = list("GOOGLE_CONSUMABLE_PRODUCTS")
        reconcileInterval = try environment.duration(
            "GOOGLE_RECONCILE_INTERVAL", default: .seconds(3600), range: .zero...(.seconds(7 * 86_400)))
        apiTimeout = try environment.duration(
            "GOOGLE_API_TIMEOUT", default: .seconds(15), range: .milliseconds(100)...(.seconds(300)))
    }

    /// The adapter's catalog of packages and products.
    public var catalog: GoogleAdapter.Catalog {
        GoogleAdapter.Catalog(
            packages: packages, oneTimeProducts: oneTimeProducts, consumableProducts: consumableProducts)
    }
}
