import Crypto
import Foundation

/// App Store signed data captured from Apple (notifications, transactions and renewal infos,
/// each the JWS exactly as Apple signed it), and what the App Store Server API answered from it
/// at an instant: the newest version of each piece signed at or before that instant. Nothing is
/// signed again, so the answers verify against Apple's own root.
///
/// The input is JSON lines, one object a line with `kind` (`notification`, `transaction` or
/// `renewalInfo`) and `jws`; every other field of a line is ignored, what a record means is
/// read from its signed payload. A pure value: the HTTP surface is `RecordedAppleAPI`.
public struct RecordedAppleData: Sendable {
    /// One signed payload with the fields the answers are chosen by.
    public struct Record: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable {
            case notification, transaction, renewalInfo
        }

        public let kind: Kind
        /// The payload's `signedDate` (epoch ms).
        public let signedDate: Int64
        /// The subscription the payload is about; nil for a notification without a transaction
        /// (a TEST notification, a summary).
        public let originalTransactionID: String?
        /// A transaction's `transactionId`.
        public let transactionID: String?
        /// A transaction's `purchaseDate`, `expiresDate` and `revocationDate`.
        public let purchaseDate: Int64?
        public let expiresDate: Int64?
        public let revocationDate: Int64?
        /// A transaction's `subscriptionGroupIdentifier`.
        public let groupIdentifier: String?
        /// A notification's `data.status`.
        public let status: Int?
        /// The payload's `bundleId` (a notification's `data.bundleId`).
        public let bundleID: String?
        /// The payload's `environment` (a notification's `data.environment`).
        public let environment: String?
        /// The compact JWS as recorded.
        public let jws: String
    }

    /// The records in the order of the input; among versions signed at the same instant the
    /// later line counts as the newer.
    public let records: [Record]

    /// Parses JSON lines (blank lines skipped); throws `SimError(.badRequest)` naming the first
    /// line that is not a record.
    public init(jsonLines text: String) throws(SimError) {
        var records: [Record] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            guard let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any],
                let kind = (object["kind"] as? String).flatMap(Record.Kind.init(rawValue:)),
                let jws = object["jws"] as? String
            else {
                throw SimError(.badRequest, "recorded line \(index + 1) is not an object with a kind and a jws")
            }
            guard let record = Self.record(kind, jws) else {
                throw SimError(.badRequest, "recorded line \(index + 1): the \(kind.rawValue) payload is not readable")
            }
            records.append(record)
        }
        self.records = records
    }

    /// Reads and parses the JSON lines file at `path`.
    public init(contentsOfFile path: String) throws(SimError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SimError(.badRequest, "cannot read the recorded App Store data at \(path)")
        }
        try self.init(jsonLines: String(decoding: data, as: UTF8.self))
    }

    // MARK: Answers at an instant

    /// The subscription (original transaction id) `transactionID` belongs to, by a record
    /// signed at or before `asOf`: `transactionID` is a recorded transaction or an original id.
    public func originalTransactionID(of transactionID: String, asOf: Int64) -> String? {
        let known = records.filter { $0.signedDate <= asOf }
        if let transaction = known.first(where: { $0.kind == .transaction && $0.transactionID == transactionID }) {
            return transaction.originalTransactionID
        }
        return known.contains { $0.originalTransactionID == transactionID } ? transactionID : nil
    }

    /// The newest version signed at or before `asOf` of the transaction `transactionID`.
    public func transaction(_ transactionID: String, asOf: Int64) -> Record? {
        Self.newest(records.filter { $0.kind == .transaction && $0.transactionID == transactionID }, asOf: asOf)
    }

    /// The newest version at or before `asOf` of each distinct transaction of the subscription
    /// `original`, by `purchaseDate` (then transaction id), oldest first.
    public func history(_ original: String, asOf: Int64) -> [Record] {
        var newest: [String: Record] = [:]
        for record in records
        where record.kind == .transaction && record.originalTransactionID == original && record.signedDate <= asOf {
            guard let id = record.transactionID else { continue }
            if let known = newest[id], known.signedDate > record.signedDate { continue }
            newest[id] = record
        }
        return newest.values.sorted {
            ($0.purchaseDate ?? 0, $0.transactionID ?? "") < ($1.purchaseDate ?? 0, $1.transactionID ?? "")
        }
    }

    /// The subscription's latest transaction as Apple's status answer names it: of the
    /// transactions known at `asOf`, the one with the latest `purchaseDate` (the period the
    /// subscription is in or last was in), in its newest version. Not the newest payload
    /// overall: a refund re-signs an older transaction of the chain.
    public func latestTransaction(_ original: String, asOf: Int64) -> Record? {
        history(original, asOf: asOf).last
    }

    /// The newest renewal info of the subscription signed at or before `asOf`.
    public func renewalInfo(_ original: String, asOf: Int64) -> Record? {
        Self.newest(
            records.filter { $0.kind == .renewalInfo && $0.originalTransactionID == original }, asOf: asOf)
    }

    /// The subscription's status at `asOf`: the `data.status` of the newest notification
    /// about it signed at or before then; without one, what the latest transaction says (5
    /// revoked, 2 expired by `asOf`, else 1 active).
    public func status(_ original: String, asOf: Int64) -> Int? {
        let notification = Self.newest(
            records.filter { $0.kind == .notification && $0.originalTransactionID == original && $0.status != nil },
            asOf: asOf)
        if let status = notification?.status { return status }
        guard let latest = latestTransaction(original, asOf: asOf) else { return nil }
        if latest.revocationDate != nil { return 5 }
        if let expires = latest.expiresDate, expires <= asOf { return 2 }
        return 1
    }

    /// The bundle ids the records name.
    public var bundleIDs: Set<String> { Set(records.compactMap(\.bundleID)) }

    /// The environment the records come from (the first one that names it), `Sandbox` when none does.
    public var environment: String { records.lazy.compactMap(\.environment).first ?? "Sandbox" }

    /// The last of the newest records signed at or before `asOf` (later lines win ties).
    private static func newest(_ candidates: [Record], asOf: Int64) -> Record? {
        var best: Record?
        for record in candidates where record.signedDate <= asOf {
            if let known = best, known.signedDate > record.signedDate { continue }
            best = record
        }
        return best
    }

    // MARK: Reading payloads

    /// The record of one JWS, from its payload (not verified here: the verifier does that).
    private static func record(_ kind: Record.Kind, _ jws: String) -> Record? {
        guard let payload = payload(jws), let signedDate = int64(payload["signedDate"]) else { return nil }
        switch kind {
        case .notification:
            let data = payload["data"] as? [String: Any]
            let transaction = (data?["signedTransactionInfo"] as? String).flatMap(Self.payload)
            return Record(
                kind: kind, signedDate: signedDate,
                originalTransactionID: transaction?["originalTransactionId"] as? String,
                transactionID: nil, purchaseDate: nil, expiresDate: nil, revocationDate: nil, groupIdentifier: nil,
                status: (data?["status"] as? NSNumber)?.intValue, bundleID: data?["bundleId"] as? String,
                environment: data?["environment"] as? String, jws: jws)
        case .transaction:
            guard let id = payload["transactionId"] as? String else { return nil }
            return Record(
                kind: kind, signedDate: signedDate,
                originalTransactionID: payload["originalTransactionId"] as? String ?? id, transactionID: id,
                purchaseDate: int64(payload["purchaseDate"]), expiresDate: int64(payload["expiresDate"]),
                revocationDate: int64(payload["revocationDate"]),
                groupIdentifier: payload["subscriptionGroupIdentifier"] as? String, status: nil,
                bundleID: payload["bundleId"] as? String, environment: payload["environment"] as? String, jws: jws)
        case .renewalInfo:
            guard let original = payload["originalTransactionId"] as? String else { return nil }
            return Record(
                kind: kind, signedDate: signedDate, originalTransactionID: original, transactionID: nil,
                purchaseDate: nil, expiresDate: nil, revocationDate: nil, groupIdentifier: nil, status: nil,
                bundleID: nil, environment: payload["environment"] as? String, jws: jws)
        }
    }

    private static func payload(_ jws: String) -> [String: Any]? {
        guard let parsed = try? CompactJWS(jws) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(parsed.payload)) as? [String: Any]
    }

    private static func int64(_ value: Any?) -> Int64? { (value as? NSNumber)?.int64Value }
}
