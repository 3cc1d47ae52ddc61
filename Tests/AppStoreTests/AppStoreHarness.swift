import AppStore
import Crypto
import Foundation
import TestSupport

/// What a client test needs: an App Store Connect key generated for the test, a manual clock,
/// a recording sleeper, and a fake server per environment that checks tokens against that key.
struct AppStoreHarness {
    static let keyID = "2X9R4HXF34"
    static let issuerID = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundleID = "com.example.subscriptions"
    static let start = Date(timeIntervalSince1970: 1_750_000_000)

    let key: PrivateKey
    let clock = ManualClock(AppStoreHarness.start)
    let sleeper: RecordingSleeper
    let production: FakeAppStoreServer
    let sandbox: FakeAppStoreServer

    /// Fakes that accept tokens signed by the client's key, or by `serverKey` when given (so a
    /// test can make every token fail).
    init(serverKey: PrivateKey? = nil, sleeper: RecordingSleeper = RecordingSleeper()) throws {
        key = try PrivateKey.generate(.p256)
        self.sleeper = sleeper
        let clock = clock
        let rules = FakeAppStoreServer.TokenRules(
            keyID: Self.keyID, issuerID: Self.issuerID, bundleID: Self.bundleID,
            publicKey: try PublicKey(pem: try (serverKey ?? key).publicKeyPEM()), now: { clock.now() })
        production = try FakeAppStoreServer(rules: rules)
        sandbox = try FakeAppStoreServer(rules: rules)
    }

    /// The configuration a client of these fakes gets: their URLs, this clock and sleeper.
    func configuration() -> AppStoreServerAPIClient.Configuration {
        var configuration = AppStoreServerAPIClient.Configuration(
            keyID: Self.keyID, issuerID: Self.issuerID, bundleID: Self.bundleID, privateKey: key)
        configuration.productionBaseURL = production.baseURL
        configuration.sandboxBaseURL = sandbox.baseURL
        // Real time, and no test here waits for it: generous, because the whole suite runs at
        // once on two cores beside the end-to-end tests' processes.
        configuration.requestTimeout = .seconds(120)
        let clock = clock
        let sleeper = sleeper
        configuration.now = { clock.now() }
        configuration.sleep = { try await sleeper.sleep($0) }
        return configuration
    }

    /// A client of these fakes, with `adjust` applied to its configuration.
    func client(_ adjust: (inout AppStoreServerAPIClient.Configuration) -> Void = { _ in }) throws
        -> AppStoreServerAPIClient
    {
        var configuration = configuration()
        adjust(&configuration)
        return try AppStoreServerAPIClient(configuration: configuration)
    }
}
