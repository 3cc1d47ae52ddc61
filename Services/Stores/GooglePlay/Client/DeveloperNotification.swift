public import Foundation

/// A Real-time Developer Notification: the JSON in a Pub/Sub push's `message.data`.
/// `{"version":"1.0","packageName":…,"eventTimeMillis":"…",` and exactly one of
/// `subscriptionNotification`, `oneTimeProductNotification`, `voidedPurchaseNotification`,
/// `testNotification` `}`. Members Google adds later are ignored.
///
/// It encodes back to the same shape (with `eventTimeMillis` as a decimal string).
public struct DeveloperNotification: Sendable, Hashable, Codable {
    /// What the notification is about.
    public enum Kind: Sendable, Hashable {
        /// `subscriptionNotification`.
        case subscription(SubscriptionNotification)
        /// `oneTimeProductNotification`.
        case oneTimeProduct(OneTimeProductNotification)
        /// `voidedPurchaseNotification`.
        case voidedPurchase(VoidedPurchaseNotification)
        /// `testNotification`.
        case test(TestNotification)
        /// None of the kinds this version knows: a kind Google added later. Recorded and
        /// acknowledged, never refused (Pub/Sub would deliver it again until it expires).
        case unknown
    }

    /// The largest `data` decoded by default, in bytes; real notifications are under 1 KB.
    public static let defaultMaxBytes = 16 * 1024

    /// The notification format's version (`1.0`).
    public var version: String
    /// The app the notification is about.
    public var packageName: String
    /// When the event happened, in milliseconds since the epoch (sent as a decimal string).
    public var eventTimeMillis: Int64
    /// The one notification it carries.
    public var kind: Kind

    /// `eventTimeMillis` as a date.
    public var eventTime: Date { Date(timeIntervalSince1970: Double(eventTimeMillis) / 1000) }

    /// A notification with these fields.
    public init(version: String, packageName: String, eventTimeMillis: Int64, kind: Kind) {
        self.version = version
        self.packageName = packageName
        self.eventTimeMillis = eventTimeMillis
        self.kind = kind
    }

    /// Decodes the JSON of a push's `message.data`. Throws `PubSubPushDecodingError` with
    /// `.tooLarge` over `maxBytes`; `.notANotification` when it is not a JSON object, a required
    /// field is absent or of the wrong type (the message names it), `eventTimeMillis` is not a
    /// decimal number, or it carries more than one kind. One that carries none of the four known
    /// kinds is `.unknown`; unknown `notificationType` codes decode.
    public init(json: some Collection<UInt8>, maxBytes: Int = Self.defaultMaxBytes) throws(PubSubPushDecodingError) {
        guard json.count <= maxBytes else {
            throw PubSubPushDecodingError(
                .tooLarge, "the notification is \(json.count) bytes, more than the \(maxBytes) accepted")
        }
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(json))
        } catch let error as KindError {
            switch error {
            case .several(let names):
                throw PubSubPushDecodingError(
                    .notANotification, "the notification carries more than one kind: \(names.joined(separator: ", "))")
            }
        } catch let error as DecodingError {
            throw PubSubPushDecodingError(.notANotification, Self.describe(error, what: "the notification"))
        } catch {
            throw PubSubPushDecodingError(.notANotification, "the notification is not JSON")
        }
    }

    private enum CodingKeys: String, CodingKey {
        case version, packageName, eventTimeMillis, subscriptionNotification, oneTimeProductNotification,
            voidedPurchaseNotification, testNotification
    }

    /// How many kinds a notification carried, when not exactly one.
    private enum KindError: Error {
        case several([String])
    }

    /// Decodes Google's shape; see `init(json:maxBytes:)`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(String.self, forKey: .version)
        packageName = try container.decode(String.self, forKey: .packageName)
        // A decimal string as Google sends it; a JSON integer is taken too.
        if let text = try? container.decode(String.self, forKey: .eventTimeMillis) {
            guard let millis = Int64(text), millis >= 0 else {
                throw DecodingError.dataCorruptedError(
                    forKey: .eventTimeMillis, in: container,
                    debugDescription: "is not a decimal number of milliseconds")
            }
            eventTimeMillis = millis
        } else {
            eventTimeMillis = try container.decode(Int64.self, forKey: .eventTimeMillis)
        }
        var kinds: [(CodingKeys, Kind)] = []
        if let notification = try container.decodeIfPresent(
            SubscriptionNotification.self, forKey: .subscriptionNotification)
        {
            kinds.append((.subscriptionNotification, .subscription(notification)))
        }
        if let notification = try container.decodeIfPresent(
            OneTimeProductNotification.self, forKey: .oneTimeProductNotification)
        {
            kinds.append((.oneTimeProductNotification, .oneTimeProduct(notification)))
        }
        if let notification = try container.decodeIfPresent(
            VoidedPurchaseNotification.self, forKey: .voidedPurchaseNotification)
        {
            kinds.append((.voidedPurchaseNotification, .voidedPurchase(notification)))
        }
        if let notification = try container.decodeIfPresent(TestNotification.self, forKey: .testNotification) {
            kinds.append((.testNotification, .test(notification)))
        }
        guard kinds.count <= 1 else { throw KindError.several(kinds.map(\.0.stringValue)) }
        kind = kinds.first?.1 ?? .unknown
    }

    /// Encodes Google's shape, `eventTimeMillis` as a decimal string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(packageName, forKey: .packageName)
        try container.encode(String(eventTimeMillis), forKey: .eventTimeMillis)
        switch kind {
        case .subscription(let notification): try container.encode(notification, forKey: .subscriptionNotification)
        case .oneTimeProduct(let notification):
            try container.encode(notification, forKey: .oneTimeProductNotification)
        case .voidedPurchase(let notification):
            try container.encode(notification, forKey: .voidedPurchaseNotification)
        case .test(let notification): try container.encode(notification, forKey: .testNotification)
        case .unknown: break
        }
    }

    /// A message naming the field a `DecodingError` is about, never its value.
    static func describe(_ error: DecodingError, what: String) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(what) has no \(path(context.codingPath + [key]))"
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            return "\(what) is not a JSON object"
        case .typeMismatch(_, let context):
            return "\(what)'s \(path(context.codingPath)) has the wrong type"
        case .valueNotFound(_, let context):
            return "\(what)'s \(path(context.codingPath)) is null"
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return "\(what) is not JSON"
        case .dataCorrupted(let context) where context.debugDescription.hasPrefix("is not a decimal"):
            return "\(what)'s \(path(context.codingPath)) \(context.debugDescription)"
        case .dataCorrupted(let context):
            return "\(what)'s \(path(context.codingPath)) has an invalid value"
        @unknown default:
            return "\(what) is not of the expected shape"
        }
    }
}
