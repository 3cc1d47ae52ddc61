import Crypto
import Foundation
import Wire

/// The real sandbox subscription in `../shared/fixtures/apple/jws/sandbox-lifecycle-42.jsonl`
/// (beside the checkout), read straight from the signed payloads, and the access it gives by
/// the verified-periods reading, worked out here without the services:
/// - per distinct `transactionId`, the version with the newest `signedDate` counts;
/// - each transaction is the period [purchaseDate, expiresDate), clipped at the purchaseDate of
///   the chain's next transaction (by purchaseDate) when that one starts inside it (an upgrade);
/// - access at `at` iff a period contains it and has no revocationDate at or before `at`; it
///   lasts until the end of the unbroken run of unrevoked periods around `at`;
/// - a denial is NO_GRANT before the first period, REVOKED inside a revoked part of a period,
///   EXPIRED otherwise.
struct RecordedAppleLifecycle {
    static let fixtures: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple")
    static var file: URL { fixtures.appendingPathComponent("jws/sandbox-lifecycle-42.jsonl") }
    static var root: URL { fixtures.appendingPathComponent("certs/AppleRootCA-G3.cer") }
    static var available: Bool {
        FileManager.default.fileExists(atPath: file.path) && FileManager.default.fileExists(atPath: root.path)
    }
    static let skipMessage =
        "../shared/fixtures/apple (sandbox-lifecycle-42.jsonl, AppleRootCA-G3.cer) is absent: the real App Store lifecycle is not replayed"

    static let bundleID = "com.loki-project.loki-messenger"
    static let appAppleID: Int64 = 1_470_168_868
    static let products = ["com.getsession.org.pro_sub", "com.getsession.org.pro_sub_3_months"]

    struct Notification: Sendable {
        let type: String
        let subtype: String?
        let signedDate: Int64
        let jws: String
        var name: String { subtype.map { "\(type)/\($0)" } ?? type }
    }

    struct Transaction: Sendable {
        let id: String
        let original: String
        let productID: String
        let purchase: Int64
        let expires: Int64
        let revocation: Int64?
        let signedDate: Int64
    }

    /// One transaction's share of access: [start, end), taken back from `revocation` on.
    struct Period: Sendable {
        let transactionID: String
        let start: Int64
        let end: Int64
        let revocation: Int64?
        /// The part that gives access.
        var granted: Range<Int64> { start..<max(start, min(end, revocation ?? end)) }
    }

    /// What CheckAccess says at one instant, as the timeline compares it.
    struct Answer: Sendable, Hashable, CustomStringConvertible {
        let allowed: Bool
        let reason: AccessReason?
        let until: Int64?

        init(allowed: Bool, reason: AccessReason?, until: Int64?) {
            self.allowed = allowed
            self.reason = reason
            self.until = until
        }

        init(_ response: CheckAccessResponse) {
            self.init(allowed: response.allowed, reason: response.reason, until: response.untilMilliseconds)
        }

        /// Whether `actual` says what this expected answer says: access, and its end when
        /// allowed; the reason when denied.
        func accepts(_ actual: Answer) -> Bool {
            allowed == actual.allowed && (allowed ? until == actual.until : reason == actual.reason)
        }

        var description: String {
            allowed
                ? "allowed until \(until.map(String.init) ?? "no end")"
                : "denied \(reason.map { "\($0)" } ?? "(no reason)")"
        }
    }

    /// The notifications in store order (by signedDate).
    let notifications: [Notification]
    /// The newest version of each distinct transaction, by purchaseDate.
    let transactions: [Transaction]
    let periods: [Period]

    /// Reads the file; throws when a line or payload is not what the fixture promises.
    init() throws {
        var notifications: [Notification] = []
        var versions: [Transaction] = []
        let text = try String(contentsOf: Self.file, encoding: .utf8)
        for line in text.split(whereSeparator: \.isNewline) {
            let object = try Self.object(Data(line.utf8))
            guard let kind = object["kind"] as? String, let jws = object["jws"] as? String else {
                throw FixtureError("a line without kind and jws")
            }
            let payload = try Self.payload(jws)
            switch kind {
            case "notification":
                let data = payload["data"] as? [String: Any]
                notifications.append(
                    Notification(
                        type: payload["notificationType"] as? String ?? "", subtype: payload["subtype"] as? String,
                        signedDate: try Self.int64(payload, "signedDate"), jws: jws))
                if let signed = data?["signedTransactionInfo"] as? String {
                    versions.append(try Self.transaction(try Self.payload(signed)))
                }
            case "transaction": versions.append(try Self.transaction(payload))
            default: continue
            }
        }
        self.notifications = notifications.sorted { $0.signedDate < $1.signedDate }
        var newest: [String: Transaction] = [:]
        for version in versions where (newest[version.id]?.signedDate ?? .min) <= version.signedDate {
            newest[version.id] = version
        }
        transactions = newest.values.sorted { ($0.purchase, $0.id) < ($1.purchase, $1.id) }
        var periods: [Period] = []
        for (index, transaction) in transactions.enumerated() {
            let next = transactions[(index + 1)...].first { $0.original == transaction.original }
            var end = transaction.expires
            if let next, next.purchase >= transaction.purchase, next.purchase < end { end = next.purchase }
            periods.append(
                Period(
                    transactionID: transaction.id, start: transaction.purchase, end: end,
                    revocation: transaction.revocation))
        }
        self.periods = periods
    }

    /// The instants the timeline is taken at, each with what it is: every notification's
    /// signedDate and a millisecond either side, each transaction's purchaseDate,
    /// expiresDate − 1, expiresDate and revocationDate.
    var points: [(at: Int64, label: String)] {
        var labels: [Int64: [String]] = [:]
        for notification in notifications {
            labels[notification.signedDate - 1, default: []].append("\(notification.name) signedDate-1")
            labels[notification.signedDate, default: []].append("\(notification.name) signedDate")
            labels[notification.signedDate + 1, default: []].append("\(notification.name) signedDate+1")
        }
        for transaction in transactions {
            labels[transaction.purchase, default: []].append("\(transaction.id) purchaseDate")
            labels[transaction.expires - 1, default: []].append("\(transaction.id) expiresDate-1")
            labels[transaction.expires, default: []].append("\(transaction.id) expiresDate")
            if let revocation = transaction.revocation {
                labels[revocation, default: []].append("\(transaction.id) revocationDate")
            }
        }
        return labels.keys.sorted().map { ($0, labels[$0]!.joined(separator: ", ")) }
    }

    /// The answer the verified periods give at `at`.
    func expected(at: Int64) -> Answer {
        let granted = periods.map(\.granted).filter { !$0.isEmpty }.sorted { $0.lowerBound < $1.lowerBound }
        if var run = granted.first(where: { $0.contains(at) }) {
            // Extend through every granted range that starts inside or right at the end of the run.
            var grew = true
            while grew {
                grew = false
                for range in granted where range.lowerBound <= run.upperBound && range.upperBound > run.upperBound {
                    run = run.lowerBound..<range.upperBound
                    grew = true
                }
            }
            return Answer(allowed: true, reason: .granted, until: run.upperBound)
        }
        guard let first = periods.map(\.start).min(), at >= first else {
            return Answer(allowed: false, reason: .noGrant, until: nil)
        }
        let revoked = periods.contains { period in
            (period.start..<period.end).contains(at) && (period.revocation.map { $0 <= at } ?? false)
        }
        return Answer(allowed: false, reason: revoked ? .revoked : .expired, until: nil)
    }

    // MARK: Reading payloads

    /// The fixture file is not what it should be.
    struct FixtureError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = "sandbox-lifecycle-42.jsonl: \(description)" }
    }

    private static func object(_ data: Data) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw FixtureError("not a JSON object")
        }
        return object
    }

    private static func payload(_ jws: String) throws -> [String: Any] {
        try object(Data(try CompactJWS(jws).payload))
    }

    private static func int64(_ object: [String: Any], _ field: String) throws -> Int64 {
        guard let value = (object[field] as? NSNumber)?.int64Value else {
            throw FixtureError("a payload without \(field)")
        }
        return value
    }

    private static func transaction(_ payload: [String: Any]) throws -> Transaction {
        guard let id = payload["transactionId"] as? String, let productID = payload["productId"] as? String else {
            throw FixtureError("a transaction without transactionId or productId")
        }
        return Transaction(
            id: id, original: payload["originalTransactionId"] as? String ?? id, productID: productID,
            purchase: try int64(payload, "purchaseDate"), expires: try int64(payload, "expiresDate"),
            revocation: (payload["revocationDate"] as? NSNumber)?.int64Value,
            signedDate: try int64(payload, "signedDate"))
    }
}
