import AppStore
import Crypto
import Dispatch
import Foundation
import Glibc
import HTTP
import Observability

/// `storesim` from its environment: generates the App Store signing chain and an App Store
/// Connect API key, writes what the services need to trust it into `STORESIM_DIR`, serves the
/// store APIs and the control surface, and runs until SIGTERM or SIGINT.
///
/// Settings (all optional):
/// - `STORESIM_LISTEN`: host:port to serve on (default `127.0.0.1:0`, any free port; the log
///   line "http server listening" gives it).
/// - `STORESIM_DIR`: where to write the files (default `./storesim`).
/// - `STORESIM_START`: the clock's start, epoch milliseconds (default now).
/// - `STORESIM_APPLE_BUNDLE_ID` (default `com.example.app`), `STORESIM_APPLE_APP_ID`
///   (default 1234567890), `STORESIM_APPLE_GRACE_DAYS` (default 16; 0 for none).
/// - `STORESIM_APPLE_PRODUCTS`: `id:group:period:level` entries separated by commas, the period
///   as `<n>d`, `<n>m` or `<n>y` (default a monthly `com.example.pro.monthly` at level 2 and a
///   monthly `com.example.premium.monthly` at level 1, both in group `pro`).
/// - `STORESIM_APPLE_NOTIFICATION_URL`: where App Store notifications go (also settable later
///   with `POST /control/apple/notification-url`).
public enum StoreSimLauncher {
    static let keyID = "SIMKEY0001"
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
                    gracePeriodDays: settings.graceDays, products: settings.products),
                clock: clock, chain: chain)
            let simulator = StoreSimulator(
                clock: clock, apple: apple, appleDelivery: NotificationDelivery(url: settings.notificationURL))
            let server = HTTPServer(host: settings.host, port: settings.port, threads: 4, logger: logger)
            AppleSimAPI(
                store: apple,
                credentials: .init(
                    keyID: keyID, issuerID: issuerID, publicKey: try PublicKey(pem: apiKey.publicKeyPEM()))
            ).register(on: server)
            simulator.registerControl(on: server)
            try server.start()
            try writeFiles(settings: settings, chain: chain, apiKey: apiKey, port: server.port)
            logger.info("storesim ready", ["directory": settings.directory, "port": String(server.port)])
            waitForTermination()
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

    /// The verifier's settings for this simulator, and the files they name.
    static func writeFiles(settings: Settings, chain: AppleSigningChain, apiKey: PrivateKey, port: Int) throws {
        let directory = URL(fileURLWithPath: settings.directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let root = directory.appendingPathComponent("apple-root.pem")
        let key = directory.appendingPathComponent("apple-api-key.p8")
        try Data(chain.root.pem.utf8).write(to: root)
        try Data(try apiKey.pemPKCS8().utf8).write(to: key, options: .atomic)
        chmod(key.path, 0o600)
        let lines = [
            "APPLE_BUNDLE_ID=\(settings.bundleID)", "APPLE_ENVIRONMENTS=Sandbox",
            "APPLE_ROOT_CERTIFICATES=\(root.path)", "APPLE_KEY_ID=\(keyID)", "APPLE_ISSUER_ID=\(issuerID)",
            "APPLE_PRIVATE_KEY_FILE=\(key.path)", "APPLE_API_SANDBOX_URL=http://\(settings.host):\(port)",
            "APPLE_API_URL=http://\(settings.host):\(port)",
        ]
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(
            to: directory.appendingPathComponent("verifier.env"), options: .atomic)
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
        var notificationURL: URL?

        init(_ environment: [String: String]) throws(SimError) {
            func bad(_ name: String, _ problem: String) -> SimError { SimError(.badRequest, "\(name): \(problem)") }
            if let listen = environment["STORESIM_LISTEN"] {
                guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
                    (0...65535).contains(port), colon != listen.startIndex
                else { throw bad("STORESIM_LISTEN", "expected host:port, got \"\(listen)\"") }
                host = String(listen[..<colon])
                self.port = port
            }
            directory = environment["STORESIM_DIR"] ?? directory
            if let text = environment["STORESIM_START"] {
                guard let value = Int64(text), value > 0 else {
                    throw bad("STORESIM_START", "expected epoch milliseconds")
                }
                start = value
            }
            bundleID = environment["STORESIM_APPLE_BUNDLE_ID"] ?? bundleID
            if let text = environment["STORESIM_APPLE_APP_ID"] {
                guard let value = Int64(text), value > 0 else {
                    throw bad("STORESIM_APPLE_APP_ID", "expected a number")
                }
                appAppleID = value
            }
            if let text = environment["STORESIM_APPLE_GRACE_DAYS"] {
                guard let value = Int(text), (0...28).contains(value) else {
                    throw bad("STORESIM_APPLE_GRACE_DAYS", "expected 0 to 28")
                }
                graceDays = value == 0 ? nil : value
            }
            if let text = environment["STORESIM_APPLE_PRODUCTS"] {
                products = try text.split(separator: ",").map { entry throws(SimError) in
                    let parts = entry.split(separator: ":").map(String.init)
                    guard parts.count == 4, let level = Int(parts[3]), level > 0, let period = Self.period(parts[2])
                    else {
                        throw bad("STORESIM_APPLE_PRODUCTS", "expected id:group:<n>d|m|y:level, got \"\(entry)\"")
                    }
                    return AppleSimProduct(id: parts[0], group: parts[1], period: period, level: level)
                }
            }
            if let text = environment["STORESIM_APPLE_NOTIFICATION_URL"] {
                guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                    throw bad("STORESIM_APPLE_NOTIFICATION_URL", "expected an http(s) URL")
                }
                notificationURL = url
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
