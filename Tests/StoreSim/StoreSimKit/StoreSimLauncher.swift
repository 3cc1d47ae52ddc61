import AppStore
import Config
import Crypto
import Dispatch
import Foundation
import Glibc
import HTTP
import Observability
import Sockets

/// `storesim` from its environment: generates the App Store signing chain and an App Store
/// Connect API key, writes what the services need to trust it into `STORESIM_DIR`, serves the
/// store APIs and the control surface, and runs until SIGTERM or SIGINT.
///
/// Settings (all optional):
/// - `STORESIM_LISTEN`: host:port the store APIs are served on (default `127.0.0.1:0`, any free
///   port); `STORESIM_CONTROL_LISTEN`: the same for the control surface. They are two servers
///   so that a control call waiting for the services to take its notifications never holds a
///   thread the services' calls back into the store APIs need. The log line "storesim ready"
///   gives both ports (`port`, `control_port`).
/// - `STORESIM_DIR`: where to write the files (default `./storesim`), among them `clock`: the
///   simulator's time and the machine's when it was written (epoch milliseconds), rewritten at
///   each move, which services started with `CLOCK_FILE` naming it decide at (`FileClock`).
/// - `STORESIM_START`: the clock's start, epoch milliseconds (default now).
/// - `STORESIM_APPLE_BUNDLE_ID` (default `com.example.app`), `STORESIM_APPLE_APP_ID`
///   (default 1234567890), `STORESIM_APPLE_GRACE_DAYS` (default 16; 0 for none).
/// - `STORESIM_APPLE_PRODUCTS`: `id:group:period:level[:price]` entries separated by commas, the
///   period as `<n>d`, `<n>m` or `<n>y`, the price in milliunits (default a monthly
///   `com.example.pro.monthly` at level 2 and a monthly `com.example.premium.monthly` at level 1,
///   both in group `pro`).
/// - `STORESIM_APPLE_ONE_TIME_PRODUCTS`: `id:kind[:price]` entries separated by commas, the kind
///   `consumable`, `non-consumable` or `non-renewing` (default `com.example.coins.100`,
///   `com.example.lifetime` and `com.example.pass.30d`, one of each).
/// - `STORESIM_APPLE_RENEWAL_LEAD`: how long before a period's end its renewal may be charged, a
///   duration such as `24h`, `90m` or `0` (default 24h, at most 24h); each renewal is charged at
///   a moment drawn from that window, from `STORESIM_APPLE_SEED` (a number, default fixed).
/// - `STORESIM_APPLE_HISTORY_PAGE_SIZE`: transactions per page of the transaction history
///   (default 20).
/// - `STORESIM_APPLE_NOTIFICATION_URL`: where App Store notifications go (also settable later
///   with `POST /control/apple/notification-url`).
/// - `STORESIM_GOOGLE_PACKAGE` (default `com.example.app`), `STORESIM_GOOGLE_PRODUCTS`:
///   `id:basePlan:period[:prepaid]` entries separated by commas (default `pro_sub:monthly:1m` and
///   `premium_sub:monthly:1m`), `STORESIM_GOOGLE_ONE_TIME_PRODUCTS`: product ids separated by
///   commas (default `coins_100,lifetime_unlock`), `STORESIM_GOOGLE_GRACE_DAYS` (default 7),
///   `STORESIM_GOOGLE_HOLD_DAYS` (default 30), `STORESIM_GOOGLE_TEST_PURCHASES` (`true` makes
///   every purchase a test purchase unless the buy says otherwise; default false),
///   `STORESIM_GOOGLE_PUSH_URL`: where Pub/Sub pushes go (also
///   `POST /control/google/notification-url`).
/// - `STORESIM_APPLE_RECORDED`: a JSON lines file of recorded Apple-signed data; the App Store
///   Server API then answers only from it (`RecordedAppleAPI`, as of `STORESIM_START` until
///   `POST /control/apple/recorded/as-of` moves it), and `STORESIM_APPLE_RECORDED_ROOTS` (then
///   required: the certificate files of Apple's root) is what verifier.env names as trust
///   anchors, with `APPLE_APP_APPLE_ID`.
/// - `STORESIM_GOOGLE_RECORDED`: a JSON file of recorded Play notifications paired with the
///   subscriptionsv2 answers that followed them (`RecordedGoogleData`); the Play Developer API
///   then answers only from it (`RecordedGoogleAPI`), each token with the answer of its most
///   recently pushed notification, and `POST /control/google/recorded/push` with `{"index": n}`
///   pushes recorded notification n (with `"run"`, a prefix that keeps the tokens of one replay
///   apart from other runs'). `STORESIM_GOOGLE_PACKAGE` must be the recorded package.
public enum StoreSimLauncher {
    static let keyID = "SIMKEY0001"
    static let serviceAccountEmail = "verifier@storesim.iam.gserviceaccount.com"
    static let pushServiceAccount = "pubsub-push@storesim.iam.gserviceaccount.com"
    static let pushAudience = "https://verifier.example.com/google/rtdn"
    static let issuerID = "57246542-96fe-1a63-e053-0824d011072a"

    /// Runs the simulator; returns the exit status.
    public static func run(environment: [String: String]) -> Int32 {
        let logger = Logger(service: "storesim")
        do {
            let settings = try Settings(environment)
            let clock = SimClock(startMilliseconds: settings.start)
            let chain = try AppleSigningChain.generate(now: Date(timeIntervalSince1970: Double(settings.start) / 1000))
            let apiKey = try PrivateKey.generate(.p256)
            let apple = AppleSimStore(
                configuration: AppleSimConfiguration(
                    bundleID: settings.bundleID, appAppleID: settings.appAppleID, environment: "Sandbox",
                    gracePeriodDays: settings.graceDays, products: settings.products,
                    oneTimeProducts: settings.oneTimeProducts, renewalLeadMilliseconds: settings.renewalLead,
                    renewalSeed: settings.seed),
                clock: clock, chain: chain)
            let server = HTTPServer(host: settings.host, port: settings.port, threads: 4, logger: logger)
            // The port is known once the server listens; the token URL the service account names
            // needs it, so the Google side is built after the start.
            try server.start()
            var googleConfiguration = GoogleSimConfiguration(
                packageName: settings.packageName, products: settings.googleProducts)
            googleConfiguration.gracePeriodDays = settings.googleGraceDays
            googleConfiguration.accountHoldDays = settings.googleHoldDays
            googleConfiguration.oneTimeProducts = settings.googleOneTimeProducts
            googleConfiguration.testPurchases = settings.googleTestPurchases
            let serviceAccountKey = try PrivateKey.generate(.rsa2048)
            let pushKey = try PrivateKey.generate(.rsa2048)
            let base = "http://\(settings.host):\(server.port)"
            let googleAPI = GoogleSimAPI(
                store: GoogleSimStore(configuration: googleConfiguration, clock: clock),
                identity: .init(
                    serviceAccountEmail: serviceAccountEmail,
                    serviceAccountKey: try PublicKey(pem: serviceAccountKey.publicKeyPEM()),
                    tokenURL: "\(base)/token", pushServiceAccount: pushServiceAccount, pushAudience: pushAudience,
                    pushKey: pushKey, pushKeyID: "storesim-push-1"))
            let appleAPI = AppleSimAPI(
                store: apple,
                credentials: .init(
                    keyID: keyID, issuerID: issuerID, publicKey: try PublicKey(pem: apiKey.publicKeyPEM())),
                historyPageSize: settings.historyPageSize)
            let recorded = try settings.recordedApple.map { path in
                try RecordedAppleAPI(
                    data: try RecordedAppleData(contentsOfFile: path), credentials: appleAPI.credentials,
                    bundleID: settings.bundleID, appAppleID: settings.appAppleID, asOf: settings.start)
            }
            if let recorded { recorded.register(on: server) } else { appleAPI.register(on: server) }
            let recordedGoogle = try settings.recordedGoogle.map { path in
                try RecordedGoogleAPI(
                    data: try RecordedGoogleData(contentsOfFile: path), identity: googleAPI.identity,
                    packageName: settings.packageName)
            }
            let simulator = StoreSimulator(
                clock: clock, apple: apple, appleFaults: recorded?.faults ?? appleAPI.faults,
                appleDelivery: NotificationDelivery(url: settings.notificationURL),
                googleAPI: googleAPI, googleDelivery: NotificationDelivery(url: settings.pushURL),
                googleFaults: recordedGoogle?.faults)
            if let recordedGoogle { recordedGoogle.register(on: server) } else { googleAPI.register(on: server) }
            let control = HTTPServer(host: settings.host, port: settings.controlPort, threads: 2, logger: logger)
            simulator.registerControl(on: control)
            recorded?.registerControl(on: control)
            recordedGoogle?.registerControl(on: control, delivery: simulator.googleDelivery)
            try control.start()
            try FileManager.default.createDirectory(atPath: settings.directory, withIntermediateDirectories: true)
            try clock.publish(to: URL(fileURLWithPath: settings.directory).appendingPathComponent("clock").path)
            // verifier.env last and whole: a reader that sees it finds every file it names.
            let appleSettings = try writeAppleFiles(settings: settings, chain: chain, apiKey: apiKey, port: server.port)
            let googleSettings = try writeGoogleFiles(
                settings: settings, serviceAccountKey: serviceAccountKey, api: googleAPI, base: base)
            try Data(((appleSettings + googleSettings).joined(separator: "\n") + "\n").utf8).write(
                to: URL(fileURLWithPath: settings.directory).appendingPathComponent("verifier.env"), options: .atomic)
            logger.info(
                "storesim ready",
                ["directory": settings.directory, "port": String(server.port), "control_port": String(control.port)])
            waitForTermination()
            control.stop()
            server.stop()
            logger.info("stopped")
            return 0
        } catch let error as SimError {
            logger.error("storesim cannot start", ["problem": error.message])
            return 2
        } catch {
            logger.error("storesim cannot start", ["problem": "\(error)"])
            return 1
        }
    }

    /// The App Store root certificate and API key files; returns the verifier's App Store
    /// settings for them.
    static func writeAppleFiles(settings: Settings, chain: AppleSigningChain, apiKey: PrivateKey, port: Int) throws
        -> [String]
    {
        let directory = URL(fileURLWithPath: settings.directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let root = directory.appendingPathComponent("apple-root.pem")
        let key = directory.appendingPathComponent("apple-api-key.p8")
        try Data(chain.root.pem.utf8).write(to: root)
        try Data(try apiKey.pemPKCS8().utf8).write(to: key, options: .atomic)
        chmod(key.path, 0o600)
        // Recorded data is signed by Apple: the verifier trusts Apple's root, and the app is Apple's id for it.
        let recorded = settings.recordedApple == nil ? [] : ["APPLE_APP_APPLE_ID=\(settings.appAppleID)"]
        return [
            "APPLE_BUNDLE_ID=\(settings.bundleID)", "APPLE_ENVIRONMENTS=Sandbox",
            "APPLE_ROOT_CERTIFICATES=\(settings.recordedRoots ?? root.path)", "APPLE_KEY_ID=\(keyID)",
            "APPLE_ISSUER_ID=\(issuerID)", "APPLE_PRIVATE_KEY_FILE=\(key.path)",
            "APPLE_API_SANDBOX_URL=http://\(settings.host):\(port)", "APPLE_API_URL=http://\(settings.host):\(port)",
        ] + recorded
    }

    /// The service account key file and the push JWKS; returns the verifier's Google settings
    /// for them.
    static func writeGoogleFiles(settings: Settings, serviceAccountKey: PrivateKey, api: GoogleSimAPI, base: String)
        throws -> [String]
    {
        let directory = URL(fileURLWithPath: settings.directory)
        let account = directory.appendingPathComponent("google-service-account.json")
        let jwks = directory.appendingPathComponent("google-jwks.json")
        let fields: [String: String] = [
            "type": "service_account", "project_id": "storesim", "private_key_id": "storesim-key-1",
            "private_key": try serviceAccountKey.pemPKCS8(), "client_email": serviceAccountEmail,
            "client_id": "100000000000000000001", "token_uri": "\(base)/token",
        ]
        try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]).write(to: account, options: .atomic)
        chmod(account.path, 0o600)
        try Data(api.jwks).write(to: jwks, options: .atomic)
        return [
            "GOOGLE_PACKAGES=\(settings.packageName)", "GOOGLE_SERVICE_ACCOUNT_FILE=\(account.path)",
            "GOOGLE_API_URL=\(base)", "GOOGLE_TOKEN_URL=\(base)/token", "GOOGLE_PUSH_AUDIENCE=\(pushAudience)",
            "GOOGLE_PUSH_SERVICE_ACCOUNT=\(pushServiceAccount)", "GOOGLE_JWKS=\(jwks.path)",
        ]
    }

    /// Blocks until SIGTERM or SIGINT.
    static func waitForTermination() {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let done = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "storesim.signals")
        let sources = [SIGTERM, SIGINT].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { done.signal() }
            source.resume()
            return source
        }
        done.wait()
        sources.forEach { $0.cancel() }
    }

    struct Settings {
        var host = "127.0.0.1"
        var port = 0
        var controlPort = 0
        var directory = "storesim"
        var start = Int64(Date().timeIntervalSince1970 * 1000)
        var bundleID = "com.example.app"
        var appAppleID: Int64 = 1_234_567_890
        var graceDays: Int? = 16
        var products = [
            AppleSimProduct(id: "com.example.pro.monthly", group: "pro", period: .months(1), level: 2),
            AppleSimProduct(
                id: "com.example.premium.monthly", group: "pro", period: .months(1), level: 1, price: 19_990),
        ]
        var oneTimeProducts = [
            AppleSimOneTimeProduct(id: "com.example.coins.100", kind: .consumable),
            AppleSimOneTimeProduct(id: "com.example.lifetime", kind: .nonConsumable, price: 49_990),
            AppleSimOneTimeProduct(id: "com.example.pass.30d", kind: .nonRenewingSubscription, price: 4_990),
        ]
        var renewalLead: Int64 = 86_400_000
        var seed: UInt64 = 0x5EED_0001
        var historyPageSize = AppleSimAPI.historyPageSize
        var notificationURL: URL?
        var packageName = "com.example.app"
        var googleProducts = [
            GoogleSimProduct(id: "pro_sub", basePlanID: "monthly", period: .months(1)),
            GoogleSimProduct(id: "premium_sub", basePlanID: "monthly", period: .months(1)),
        ]
        var googleOneTimeProducts = [
            GoogleSimOneTimeProduct(id: "coins_100"), GoogleSimOneTimeProduct(id: "lifetime_unlock"),
        ]
        var googleGraceDays = 7
        var googleHoldDays = 30
        var googleTestPurchases = false
        var pushURL: URL?
        var recordedApple: String?
        var recordedGoogle: String?
        var recordedRoots: String?

        init(_ environment: [String: String]) throws(SimError) {
            func bad(_ name: String, _ problem: String) -> SimError { SimError(.badRequest, "\(name): \(problem)") }
            let reader = EnvironmentReader(environment)
            do throws(ConfigError) {
                let listen = try reader.address("STORESIM_LISTEN", default: "\(host):\(port)")
                host = listen.host
                port = listen.port
                if reader.raw("STORESIM_CONTROL_LISTEN") != nil {
                    let control = try reader.address("STORESIM_CONTROL_LISTEN", default: "")
                    guard control.host == host else {
                        throw ConfigError(
                            variable: "STORESIM_CONTROL_LISTEN", problem: "must be on \(host), as the API is")
                    }
                    controlPort = control.port
                }
                graceDays = try reader.int("STORESIM_APPLE_GRACE_DAYS", default: graceDays ?? 0, range: 0...28)
                graceDays = graceDays == 0 ? nil : graceDays
                let lead = try reader.duration(
                    "STORESIM_APPLE_RENEWAL_LEAD", default: .milliseconds(renewalLead),
                    range: .zero ... .seconds(86_400))
                renewalLead = lead.components.seconds * 1000 + lead.components.attoseconds / 1_000_000_000_000_000
                historyPageSize = try reader.int(
                    "STORESIM_APPLE_HISTORY_PAGE_SIZE", default: historyPageSize, range: 1...200)
                googleGraceDays = try reader.int("STORESIM_GOOGLE_GRACE_DAYS", default: googleGraceDays, range: 0...30)
                googleHoldDays = try reader.int("STORESIM_GOOGLE_HOLD_DAYS", default: googleHoldDays, range: 0...30)
                googleTestPurchases = try reader.bool("STORESIM_GOOGLE_TEST_PURCHASES", default: googleTestPurchases)
                if reader.raw("STORESIM_APPLE_NOTIFICATION_URL") != nil {
                    notificationURL = try reader.httpURL("STORESIM_APPLE_NOTIFICATION_URL", default: "")
                }
                if reader.raw("STORESIM_GOOGLE_PUSH_URL") != nil {
                    pushURL = try reader.httpURL("STORESIM_GOOGLE_PUSH_URL", default: "")
                }
            } catch {
                throw SimError(.badRequest, error.description)
            }
            directory = environment["STORESIM_DIR"] ?? directory
            if let text = environment["STORESIM_START"] {
                guard let value = Int64(text), value > 0 else {
                    throw bad("STORESIM_START", "expected epoch milliseconds")
                }
                start = value
            }
            bundleID = environment["STORESIM_APPLE_BUNDLE_ID"] ?? bundleID
            recordedApple = environment["STORESIM_APPLE_RECORDED"]
            recordedRoots = environment["STORESIM_APPLE_RECORDED_ROOTS"]
            recordedGoogle = environment["STORESIM_GOOGLE_RECORDED"]
            if recordedApple != nil, recordedRoots?.isEmpty ?? true {
                throw bad("STORESIM_APPLE_RECORDED_ROOTS", "is required with STORESIM_APPLE_RECORDED")
            }
            if let text = environment["STORESIM_APPLE_APP_ID"] {
                guard let value = Int64(text), value > 0 else {
                    throw bad("STORESIM_APPLE_APP_ID", "expected a number")
                }
                appAppleID = value
            }
            if let text = environment["STORESIM_APPLE_PRODUCTS"] {
                products = try text.split(separator: ",").map { entry throws(SimError) in
                    let parts = entry.split(separator: ":").map(String.init)
                    guard parts.count == 4 || parts.count == 5, let level = Int(parts[3]), level > 0,
                        let period = Self.period(parts[2]), let price = parts.count == 5 ? Int64(parts[4]) : 9_990,
                        price >= 0
                    else {
                        throw bad(
                            "STORESIM_APPLE_PRODUCTS", "expected id:group:<n>d|m|y:level[:price], got \"\(entry)\"")
                    }
                    return AppleSimProduct(id: parts[0], group: parts[1], period: period, level: level, price: price)
                }
            }
            if let text = environment["STORESIM_APPLE_ONE_TIME_PRODUCTS"] {
                oneTimeProducts = try text.split(separator: ",").map { entry throws(SimError) in
                    let parts = entry.split(separator: ":").map(String.init)
                    let kinds: [String: AppleSimOneTimeProduct.Kind] = [
                        "consumable": .consumable, "non-consumable": .nonConsumable,
                        "non-renewing": .nonRenewingSubscription,
                    ]
                    guard parts.count == 2 || parts.count == 3, let kind = kinds[parts[1]],
                        let price = parts.count == 3 ? Int64(parts[2]) : 990, price >= 0
                    else {
                        throw bad(
                            "STORESIM_APPLE_ONE_TIME_PRODUCTS",
                            "expected id:consumable|non-consumable|non-renewing[:price], got \"\(entry)\"")
                    }
                    return AppleSimOneTimeProduct(id: parts[0], kind: kind, price: price)
                }
            }
            if let text = environment["STORESIM_APPLE_SEED"] {
                guard let value = UInt64(text) else { throw bad("STORESIM_APPLE_SEED", "expected a number") }
                seed = value
            }
            packageName = environment["STORESIM_GOOGLE_PACKAGE"] ?? packageName
            if let text = environment["STORESIM_GOOGLE_PRODUCTS"] {
                googleProducts = try text.split(separator: ",").map { entry throws(SimError) in
                    let parts = entry.split(separator: ":").map(String.init)
                    guard parts.count == 3 || (parts.count == 4 && parts[3] == "prepaid"),
                        let period = Self.period(parts[2])
                    else {
                        throw bad(
                            "STORESIM_GOOGLE_PRODUCTS", "expected id:basePlan:<n>d|m|y[:prepaid], got \"\(entry)\"")
                    }
                    return GoogleSimProduct(
                        id: parts[0], basePlanID: parts[1], period: period, prepaid: parts.count == 4)
                }
            }
            if let text = environment["STORESIM_GOOGLE_ONE_TIME_PRODUCTS"] {
                googleOneTimeProducts = text.split(separator: ",").map { GoogleSimOneTimeProduct(id: String($0)) }
            }
        }

        static func period(_ text: String) -> AppleSimProduct.Period? {
            guard let unit = text.last, let count = Int(text.dropLast()), count > 0 else { return nil }
            switch unit {
            case "d": return .days(count)
            case "m": return .months(count)
            case "y": return .years(count)
            default: return nil
            }
        }
    }
}
