import Crypto
import Foundation
import GooglePlay
import TestSupport

/// What a client test needs: a service account key generated for the test, a manual clock, a
/// recording sleeper, a fake OAuth token endpoint that checks assertions against that key, and
/// a fake Play Developer API that accepts the access tokens the endpoint handed out.
struct GooglePlayHarness {
    static let clientEmail = "verifier@example-project.iam.gserviceaccount.com"
    static let keyID = "8d0bb1f0c9b5e3a2f1d4c7b6a5e4d3c2b1a09f8e"
    /// The `token_uri` of the key file: the assertions' `aud`, whatever URL they are posted to.
    static let tokenURI = "https://oauth2.googleapis.com/token"
    static let packageName = "com.example.subscriptions"
    static let start = Date(timeIntervalSince1970: 1_750_000_000)

    let key: PrivateKey
    let account: GoogleServiceAccount
    let clock = ManualClock(GooglePlayHarness.start)
    let sleeper: RecordingSleeper
    let oauth: FakeGoogleOAuthServer
    let api: FakePlayDeveloperAPI

    /// Fakes that accept assertions signed by the account's key, or by `serverKey` when given
    /// (so a test can make every assertion fail).
    init(serverKey: PrivateKey? = nil, sleeper: RecordingSleeper = RecordingSleeper()) throws {
        key = try Self.sharedKey.get()
        account = try GoogleServiceAccount(
            clientEmail: Self.clientEmail, privateKeyID: Self.keyID, privateKey: key,
            tokenURI: URL(string: Self.tokenURI)!)
        self.sleeper = sleeper
        let clock = clock
        oauth = try FakeGoogleOAuthServer(
            rules: .init(
                clientEmail: Self.clientEmail, keyID: Self.keyID, audience: Self.tokenURI,
                publicKey: try PublicKey(pem: try (serverKey ?? key).publicKeyPEM()), now: { clock.now() }))
        let oauth = oauth
        api = try FakePlayDeveloperAPI(accepts: { oauth.issuedTokens.contains($0) })
    }

    /// The configuration a client of these fakes gets: their URLs, this clock and sleeper.
    func configuration() -> GooglePlayDeveloperAPIClient.Configuration {
        var configuration = GooglePlayDeveloperAPIClient.Configuration(serviceAccount: account)
        configuration.baseURL = api.baseURL
        configuration.tokenURL = oauth.tokenURL
        // Real time, and no test here waits for it: generous, because the whole suite runs at
        // once on two cores beside the end-to-end tests' processes, where a loopback answer has
        // been seen to take over 10 s.
        configuration.requestTimeout = .seconds(120)
        let clock = clock
        let sleeper = sleeper
        configuration.now = { clock.now() }
        configuration.sleep = { try await sleeper.sleep($0) }
        return configuration
    }

    /// A client of these fakes, with `adjust` applied to its configuration.
    func client(_ adjust: (inout GooglePlayDeveloperAPIClient.Configuration) -> Void = { _ in }) throws
        -> GooglePlayDeveloperAPIClient
    {
        var configuration = configuration()
        adjust(&configuration)
        return try GooglePlayDeveloperAPIClient(configuration: configuration)
    }

    /// `/androidpublisher/v3/applications/com.example.subscriptions` followed by `suffix`.
    static func path(_ suffix: String) -> String {
        "/androidpublisher/v3/applications/\(packageName)" + suffix
    }

    /// One RSA key for every test in the process: generating RSA 2048 keys is slow.
    static let sharedKey = Result { () throws(CryptoError) -> PrivateKey in try TestRSAKeys.key(4) }
}
