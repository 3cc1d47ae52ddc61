import Config
import Crypto
import Foundation
import Testing
import VerifierService

@Suite("Google Play adapter configuration")
struct GoogleSettingsTests {
    static func environment(_ change: [String: String], keyFile: String) -> [String: String] {
        var values = [
            "GOOGLE_PACKAGES": "com.example.app, com.example.other", "GOOGLE_SERVICE_ACCOUNT_FILE": keyFile,
            "GOOGLE_PUSH_AUDIENCE": "https://verifier.example.com/google/rtdn",
            "GOOGLE_PUSH_SERVICE_ACCOUNT": "rtdn@example.iam.gserviceaccount.com",
            "GOOGLE_ONE_TIME_PRODUCTS": "lifetime", "GOOGLE_CONSUMABLE_PRODUCTS": "coins",
        ]
        values.merge(change) { _, new in new }
        return values
    }

    @Test("a complete configuration is read, with its defaults")
    func complete() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID()).json").path
        try Data("{}".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let settings = try GoogleSettings(environment: EnvironmentReader(Self.environment([:], keyFile: file)))
        #expect(settings.packages == ["com.example.app", "com.example.other"])
        #expect(settings.apiURL.absoluteString == "https://androidpublisher.googleapis.com")
        #expect(settings.jwks == GoogleSettings.defaultJWKS && settings.tokenURL == nil)
        #expect(settings.apiTimeout == .seconds(15))
        let quick = try GoogleSettings(
            environment: EnvironmentReader(Self.environment(["GOOGLE_API_TIMEOUT": "750ms"], keyFile: file)))
        #expect(quick.apiTimeout == .milliseconds(750))
        #expect(
            settings.catalog.oneTimeProducts == ["lifetime", "coins"]
                && settings.catalog.consumableProducts == ["coins"])
        #expect(try GoogleSettings.isEnabled(EnvironmentReader(Self.environment([:], keyFile: file))))
        #expect(
            try !GoogleSettings.isEnabled(
                EnvironmentReader(Self.environment(["VERIFIER_STORES": "apple"], keyFile: file))))
    }

    @Test(
        "each bad or missing variable is named",
        arguments: [
            (["GOOGLE_PACKAGES": ""], "GOOGLE_PACKAGES"), (["GOOGLE_PACKAGES": "com.example/app"], "GOOGLE_PACKAGES"),
            (["GOOGLE_SERVICE_ACCOUNT_FILE": "/nonexistent.json"], "GOOGLE_SERVICE_ACCOUNT_FILE"),
            (["GOOGLE_PUSH_AUDIENCE": ""], "GOOGLE_PUSH_AUDIENCE"),
            (["GOOGLE_PUSH_SERVICE_ACCOUNT": ""], "GOOGLE_PUSH_SERVICE_ACCOUNT"),
            (["GOOGLE_API_URL": "file:///etc"], "GOOGLE_API_URL"), (["GOOGLE_TOKEN_URL": "nope"], "GOOGLE_TOKEN_URL"),
            (["GOOGLE_JWKS": "/nonexistent/jwks.json"], "GOOGLE_JWKS"),
            (["GOOGLE_RECONCILE_INTERVAL": "often"], "GOOGLE_RECONCILE_INTERVAL"),
        ])
    func badVariables(_ change: [String: String], _ variable: String) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID()).json").path
        try Data("{}".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect {
            _ = try GoogleSettings(environment: EnvironmentReader(Self.environment(change, keyFile: file)))
        } throws: { ($0 as? ConfigError)?.variable == variable }
    }
}
