import AppStore
import Config
import Crypto
import Foundation
import TestSupport
import Testing
import VerifierService

/// The Apple adapter's configuration from environment variables, and the verifier process
/// started with it.
@Suite("Apple adapter configuration")
struct AppleSettingsTests {
    /// A folder with a generated root certificate (DER) and an API key (.p8).
    struct Files {
        let directory: URL
        let root: String
        let key: String

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("apple-settings-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let chain = try AppleSigningChain.generate()
            root = directory.appendingPathComponent("root.cer").path
            try Data(chain.root.der).write(to: URL(fileURLWithPath: root))
            key = directory.appendingPathComponent("AuthKey_TEST123456.p8").path
            try Data(try PrivateKey.generate(.p256).pemPKCS8().utf8).write(to: URL(fileURLWithPath: key))
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }

        func environment(_ extra: [String: String] = [:]) -> [String: String] {
            var values = [
                "APPLE_BUNDLE_ID": "com.example.app", "APPLE_ENVIRONMENTS": "Sandbox", "APPLE_ROOT_CERTIFICATES": root,
                "APPLE_KEY_ID": "TEST123456", "APPLE_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a",
                "APPLE_PRIVATE_KEY_FILE": key,
            ]
            values.merge(extra) { _, new in new }
            return values
        }
    }

    @Test("a complete Sandbox configuration is read, with its defaults")
    func complete() throws {
        let files = try Files()
        defer { files.remove() }
        let settings = try AppleSettings(environment: EnvironmentReader(files.environment()))
        #expect(settings.environments == [.sandbox] && settings.anchors.count == 1)
        #expect(settings.productionAPI.absoluteString == "https://api.storekit.apple.com")
        #expect(settings.reconcileInterval == .seconds(3600) && !settings.askOtherEnvironment)
        #expect(try settings.verifiers().keys.sorted { $0.rawValue < $1.rawValue } == [.sandbox])
        #expect(try AppleSettings.isEnabled(EnvironmentReader(files.environment())))
        #expect(try !AppleSettings.isEnabled(EnvironmentReader([:])))
        #expect(try !AppleSettings.isEnabled(EnvironmentReader(files.environment(["VERIFIER_STORES": "google"]))))
        #expect(settings.apiTimeout == .seconds(15) && !settings.onlineChecks)
        #expect(try settings.revocationChecker() == nil)
        #expect(try settings.verifiers()[.sandbox]?.configuration.validateAtCurrentTime == false)
    }

    @Test("online checks give an OCSP checker and validate chains at the current time; the API timeout is read")
    func onlineChecksAndTimeout() throws {
        let files = try Files()
        defer { files.remove() }
        let settings = try AppleSettings(
            environment: EnvironmentReader(
                files.environment(["APPLE_ONLINE_CHECKS": "true", "APPLE_API_TIMEOUT": "2500ms"])))
        #expect(settings.onlineChecks && settings.apiTimeout == .milliseconds(2500))
        #expect(try settings.revocationChecker() != nil)
        #expect(try settings.verifiers()[.sandbox]?.configuration.validateAtCurrentTime == true)
    }

    @Test(
        "each bad or missing variable is named",
        arguments: [
            (["APPLE_BUNDLE_ID": ""], "APPLE_BUNDLE_ID"),
            (["APPLE_ENVIRONMENTS": "Xcode"], "APPLE_ENVIRONMENTS"),
            (["APPLE_ENVIRONMENTS": "Production,Sandbox"], "APPLE_APP_APPLE_ID"),
            (["APPLE_ENVIRONMENTS": "Production", "APPLE_APP_APPLE_ID": "1470168868"], "APPLE_ROOT_CERTIFICATES"),
            (["APPLE_APP_APPLE_ID": "twelve"], "APPLE_APP_APPLE_ID"),
            (["APPLE_ROOT_CERTIFICATES": "/nonexistent/root.cer"], "APPLE_ROOT_CERTIFICATES"),
            (["APPLE_KEY_ID": ""], "APPLE_KEY_ID"),
            (["APPLE_API_URL": "ftp://example.com"], "APPLE_API_URL"),
            (["APPLE_RECONCILE_INTERVAL": "soon"], "APPLE_RECONCILE_INTERVAL"),
            (["APPLE_ACCOUNT_TOKEN_NAMESPACE": "not-a-uuid"], "APPLE_ACCOUNT_TOKEN_NAMESPACE"),
            (["VERIFIER_STORES": "apple,amazon"], "VERIFIER_STORES"),
        ])
    func badVariables(_ change: [String: String], _ variable: String) throws {
        let files = try Files()
        defer { files.remove() }
        let environment = EnvironmentReader(files.environment(change))
        #expect {
            _ = try AppleSettings.isEnabled(environment)
            _ = try AppleSettings(environment: environment)
        } throws: { ($0 as? ConfigError)?.variable == variable }
    }

    @Test(
        "Production accepts Apple Root CA - G3 as the anchor",
        .enabled(if: FileManager.default.fileExists(atPath: Self.appleRoot), "../shared/fixtures is absent"))
    func productionWithAppleRoot() throws {
        let files = try Files()
        defer { files.remove() }
        let settings = try AppleSettings(
            environment: EnvironmentReader(
                files.environment([
                    "APPLE_ENVIRONMENTS": "Production", "APPLE_APP_APPLE_ID": "1470168868",
                    "APPLE_ROOT_CERTIFICATES": Self.appleRoot,
                ])))
        #expect(settings.anchors.first?.sha256Fingerprint == AppleSettings.appleRootG3Fingerprint)
    }

    static let appleRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "shared/fixtures/apple/certs/AppleRootCA-G3.pem"
        ).path

    @Test("the verifier process serves the Sandbox notification path and refuses a foreign root in Production")
    func verifierProcess() async throws {
        let files = try Files()
        defer { files.remove() }
        // The ledger address leads nowhere: the ingress answers 400 before it asks the ledger.
        let verifier = try ServiceProcess(
            "verifier", environment: files.environment(["LEDGER_ADDR": "127.0.0.1:1", "LOG_LEVEL": "info"]))
        let port = try await verifier.httpPort()
        _ = try #require(await verifier.line(containing: "\"msg\":\"apple adapter on\""))
        let (status, body) = try await httpPost(port: port, path: "/apple/notifications/sandbox", body: "{}")
        #expect(status == 400 && body.contains("signedPayload"))
        verifier.terminate()
        #expect(await verifier.waitForExit() == 0)

        let refused = try ServiceProcess(
            "verifier",
            environment: files.environment([
                "LEDGER_ADDR": "127.0.0.1:1", "APPLE_ENVIRONMENTS": "Production", "APPLE_APP_APPLE_ID": "1470168868",
            ]))
        #expect(await refused.waitForExit() == 2)
        #expect(refused.log.joined().contains("APPLE_ROOT_CERTIFICATES"))
    }
}
