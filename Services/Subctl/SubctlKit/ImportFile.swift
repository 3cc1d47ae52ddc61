import Foundation

/// An import file read into the distinct subscriptions to restore and the rows that name none.
/// Reading does no I/O: the caller hands in the file's text.
///
/// Three shapes are read: a RevenueCat Transactions export (CSV with `rc_original_app_user_id`,
/// `store`, `is_sandbox` and `original_store_transaction_id` or `store_transaction_id` columns;
/// versions 5 to 7 share them), this project's own CSV (`account_id, store, environment,
/// transaction_id` for Apple, or `purchase_token, package_name, product_id` for Google) and the
/// same fields as JSON lines.
public struct ImportFile: Sendable, Equatable {
    /// Which account a RevenueCat row is imported for.
    public enum AccountSource: String, Sendable, Equatable {
        /// `rc_original_app_user_id`.
        case original
        /// `rc_last_seen_app_user_id_alias`.
        case lastSeen = "last-seen"
    }

    /// The file's shape, as read from its first line.
    public enum Format: String, Sendable, Equatable {
        case revenueCat = "revenuecat"
        case csv
        case jsonLines = "jsonl"
    }

    /// One subscription to restore, with the 1-based rows (data lines) that name it.
    public struct Item: Sendable, Equatable {
        /// Stable across runs: `apple/ENV/TRANSACTION_ID` or `google/PACKAGE/TOKEN`.
        public var id: String
        public var accountID: String
        public var purchase: Purchase
        public var rows: [Int]

        public init(id: String, accountID: String, purchase: Purchase, rows: [Int]) {
            self.id = id
            self.accountID = accountID
            self.purchase = purchase
            self.rows = rows
        }
    }

    /// What a subscription is restored by.
    public enum Purchase: Sendable, Equatable {
        case apple(transactionID: String, sandbox: Bool)
        case google(packageName: String, productID: String, purchaseToken: String)
    }

    /// A row that names no subscription to restore, and why.
    public struct Unimported: Sendable, Equatable {
        public enum Reason: Sendable, Equatable {
            /// A Play Store row without a `purchase_token` (RevenueCat's export has none).
            case needsToken
            /// A store the import does not take (`stripe`, `amazon`, `promotional` …).
            case skipped(store: String)
            /// A row that cannot be read: what is wrong with it.
            case invalid(String)
        }

        public var row: Int
        public var reason: Reason

        public init(row: Int, reason: Reason) {
            self.row = row
            self.reason = reason
        }
    }

    public var format: Format
    /// The distinct subscriptions, in the order their first row appears.
    public var items: [Item]
    public var unimported: [Unimported]
    /// Data rows read (a RevenueCat export has a row per transaction, so several per subscription).
    public var rowCount: Int

    /// The stores RevenueCat names in its `store` column that this import restores.
    static let revenueCatApple: Set<String> = ["app_store", "mac_app_store"]
    static let revenueCatGoogle = "play_store"

    /// Reads `text`. Throws `invalidArgument` when the first line is neither a known CSV header
    /// nor a JSON object, or a CSV header lacks the columns its shape needs.
    public static func read(_ text: String, accountSource: AccountSource = .original) throws(SubctlError)
        -> ImportFile
    {
        let trimmed = text.drop { $0.isWhitespace }
        if trimmed.first == "{" { return try readJSONLines(text) }
        var records = CSVRecords(text)
        guard let header = records.next() else {
            throw SubctlError(.invalidArgument, "the import file is empty")
        }
        let columns = Dictionary(
            header.enumerated().map { ($1.trimmingCharacters(in: .whitespaces).lowercased(), $0) },
            uniquingKeysWith: { first, _ in first })
        var builder = Builder()
        if columns["rc_original_app_user_id"] != nil {
            let accountColumn =
                accountSource == .original ? "rc_original_app_user_id" : "rc_last_seen_app_user_id_alias"
            for needed in [accountColumn, "store", "is_sandbox"] where columns[needed] == nil {
                throw SubctlError(.invalidArgument, "the RevenueCat export has no \(needed) column")
            }
            guard columns["original_store_transaction_id"] != nil || columns["store_transaction_id"] != nil else {
                throw SubctlError(
                    .invalidArgument,
                    "the RevenueCat export has neither original_store_transaction_id nor store_transaction_id")
            }
            builder.format = .revenueCat
            while let record = records.next() {
                builder.row += 1
                let field = Fields(record: record, columns: columns)
                builder.addRevenueCat(field, accountColumn: accountColumn)
            }
        } else if columns["account_id"] != nil, columns["store"] != nil {
            builder.format = .csv
            while let record = records.next() {
                builder.row += 1
                builder.addOwn(Fields(record: record, columns: columns))
            }
        } else {
            throw SubctlError(
                .invalidArgument,
                "the import file's first line is neither a RevenueCat export header (rc_original_app_user_id, …), "
                    + "a CSV header with account_id and store, nor a JSON object")
        }
        return builder.file
    }

    private static func readJSONLines(_ text: String) throws(SubctlError) -> ImportFile {
        var builder = Builder()
        builder.format = .jsonLines
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty { continue }
            builder.row += 1
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                builder.refuse("not a JSON object")
                continue
            }
            var values: [String: String] = [:]
            for (name, value) in object {
                switch value {
                case let text as String: values[name.lowercased()] = text
                case let number as NSNumber: values[name.lowercased()] = number.stringValue
                default: continue
                }
            }
            builder.addOwn(Fields(values: values))
        }
        return builder.file
    }
}

/// A row's fields by column name; an absent or blank field is nil.
struct Fields {
    private let lookup: (String) -> String?

    init(record: [String], columns: [String: Int]) {
        lookup = { name in columns[name].flatMap { $0 < record.count ? record[$0] : nil } }
    }

    init(values: [String: String]) {
        lookup = { values[$0] }
    }

    subscript(_ name: String) -> String? {
        guard let value = lookup(name)?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }
}

/// Gathers rows into distinct subscriptions.
private struct Builder {
    var format: ImportFile.Format = .csv
    var row = 0
    var items: [ImportFile.Item] = []
    var index: [String: Int] = [:]
    var unimported: [ImportFile.Unimported] = []

    var file: ImportFile { ImportFile(format: format, items: items, unimported: unimported, rowCount: row) }

    mutating func refuse(_ message: String) {
        unimported.append(.init(row: row, reason: .invalid(message)))
    }

    mutating func add(account: String?, _ purchase: ImportFile.Purchase) {
        guard let account else { return refuse("no account id") }
        guard account.utf8.count <= 256 else { return refuse("the account id is over 256 bytes") }
        let id: String
        switch purchase {
        case .apple(let transactionID, let sandbox):
            guard transactionID.utf8.count <= 64, transactionID.allSatisfy(\.isASCII) else {
                return refuse("the transaction id is not 1 to 64 ASCII characters")
            }
            id = "apple/\(sandbox ? "sandbox" : "production")/\(transactionID)"
        case .google(let packageName, let productID, let purchaseToken):
            guard purchaseToken.utf8.count <= 4096, productID.utf8.count <= 256 else {
                return refuse("the purchase token is over 4096 bytes or the product id over 256")
            }
            id = "google/\(packageName)/\(purchaseToken)"
        }
        if let known = index[id] {
            // The first row's account wins; a later row naming another account is reported.
            guard items[known].accountID == account else {
                return refuse("names \(id) for account \(account), an earlier row for \(items[known].accountID)")
            }
            items[known].rows.append(row)
            return
        }
        index[id] = items.count
        items.append(.init(id: id, accountID: account, purchase: purchase, rows: [row]))
    }

    mutating func addRevenueCat(_ field: Fields, accountColumn: String) {
        let store = field["store"]?.lowercased() ?? ""
        if ImportFile.revenueCatApple.contains(store) {
            guard let id = field["original_store_transaction_id"] ?? field["store_transaction_id"] else {
                return refuse("an App Store row without a transaction id")
            }
            guard let sandbox = Self.boolean(field["is_sandbox"]) else {
                return refuse("is_sandbox is neither true nor false")
            }
            add(account: field[accountColumn], .apple(transactionID: id, sandbox: sandbox))
        } else if store == ImportFile.revenueCatGoogle {
            guard let token = field["purchase_token"], let package = field["package_name"] ?? field["app_id"],
                let product = field["product_identifier"] ?? field["product_id"]
            else {
                unimported.append(.init(row: row, reason: .needsToken))
                return
            }
            add(account: field[accountColumn], .google(packageName: package, productID: product, purchaseToken: token))
        } else {
            unimported.append(.init(row: row, reason: .skipped(store: store.isEmpty ? "none" : store)))
        }
    }

    mutating func addOwn(_ field: Fields) {
        let store = field["store"]?.lowercased() ?? ""
        switch store {
        case "apple":
            guard let id = field["transaction_id"] else { return refuse("an apple row without transaction_id") }
            let environment = field["environment"]?.lowercased() ?? "production"
            guard environment == "production" || environment == "sandbox" else {
                return refuse("environment is neither production nor sandbox: \(environment)")
            }
            add(account: field["account_id"], .apple(transactionID: id, sandbox: environment == "sandbox"))
        case "google":
            guard let token = field["purchase_token"] else {
                unimported.append(.init(row: row, reason: .needsToken))
                return
            }
            guard let package = field["package_name"], let product = field["product_id"] else {
                return refuse("a google row needs package_name and product_id")
            }
            add(account: field["account_id"], .google(packageName: package, productID: product, purchaseToken: token))
        default:
            unimported.append(.init(row: row, reason: .skipped(store: store.isEmpty ? "none" : store)))
        }
    }

    /// `true`/`false` (export version 4 on), `t`/`f` (earlier ones).
    static func boolean(_ text: String?) -> Bool? {
        switch text?.lowercased() {
        case "true", "t", "1": true
        case "false", "f", "0": false
        default: nil
        }
    }
}

/// The records of RFC 4180 CSV text: fields split at commas, quoted fields may hold commas,
/// newlines and doubled quotes; CRLF or LF ends a record; blank lines are passed over.
struct CSVRecords: IteratorProtocol {
    private let bytes: [UInt8]
    private var position = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    mutating func next() -> [String]? {
        while position < bytes.count, bytes[position] == UInt8(ascii: "\n") || bytes[position] == UInt8(ascii: "\r") {
            position += 1
        }
        guard position < bytes.count else { return nil }
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if position < bytes.count, bytes[position] == UInt8(ascii: "\"") {
                        field.append(byte)
                        position += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): quoted = true
            case UInt8(ascii: ","):
                fields.append(String(decoding: field, as: UTF8.self))
                field = []
            case UInt8(ascii: "\n"):
                fields.append(String(decoding: field, as: UTF8.self))
                return fields
            case UInt8(ascii: "\r"): continue
            default: field.append(byte)
            }
        }
        fields.append(String(decoding: field, as: UTF8.self))
        return fields
    }
}
