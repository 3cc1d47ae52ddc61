import Foundation

/// The body of a Pub/Sub push request: `{"message":{"data":"<base64>","messageId":…,`
/// `"publishTime":…,"attributes":{…}},"subscription":"projects/…"}`.
/// Some senders spell `message_id` and `publish_time` as well, or instead; both are read, and
/// where both are present they must agree. Nothing in it is authenticated: the push's
/// `Authorization` header is (`PubSubPushAuthenticator`).
public struct PubSubPushEnvelope: Sendable, Hashable {
    /// The largest body decoded by default, in bytes. A Play notification's push is under 2 KB.
    public static let defaultMaxBytes = 64 * 1024

    /// The Pub/Sub message id, unique per topic: the key to deduplicate redeliveries on.
    public var messageID: String
    /// When Pub/Sub accepted the message, RFC 3339 as sent (`2022-10-25T13:15:00.858Z`).
    public var publishTime: String?
    /// `message.data`, decoded from base64.
    public var data: [UInt8]
    /// `message.attributes` (empty when absent).
    public var attributes: [String: String]
    /// The subscription that pushed it (`projects/{project}/subscriptions/{name}`).
    public var subscription: String

    /// An envelope with these fields.
    public init(
        messageID: String, publishTime: String?, data: [UInt8], attributes: [String: String] = [:],
        subscription: String
    ) {
        self.messageID = messageID
        self.publishTime = publishTime
        self.data = data
        self.attributes = attributes
        self.subscription = subscription
    }

    /// Decodes a push body. Throws `PubSubPushDecodingError`: `.tooLarge` over `maxBytes`,
    /// `.notJSON` when it is not a JSON object, `.missingField` without `message`, a non-empty
    /// message id, `data` or `subscription`, `.invalidField` when a member has the wrong type or
    /// the two spellings of the id or publish time differ, `.dataNotBase64` when `data` is not
    /// standard base64 (padding optional).
    public init(json body: some Collection<UInt8>, maxBytes: Int = Self.defaultMaxBytes) throws(PubSubPushDecodingError)
    {
        guard body.count <= maxBytes else {
            throw PubSubPushDecodingError(
                .tooLarge, "the push body is \(body.count) bytes, more than the \(maxBytes) accepted")
        }
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(body))
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let context) where context.codingPath.isEmpty:
                throw PubSubPushDecodingError(.notJSON, "the push body is not JSON")
            case .typeMismatch(_, let context) where context.codingPath.isEmpty:
                throw PubSubPushDecodingError(.notJSON, "the push body is not a JSON object")
            default:
                throw PubSubPushDecodingError(
                    .invalidField, DeveloperNotification.describe(error, what: "the push body"))
            }
        } catch {
            throw PubSubPushDecodingError(.notJSON, "the push body is not JSON")
        }
        guard let message = wire.message else {
            throw PubSubPushDecodingError(.missingField, "the push body has no message")
        }
        let messageID = try Self.agreeing(message.messageId, message.messageIdSnakeCase, "messageId", "message_id")
        guard let messageID, !messageID.isEmpty else {
            throw PubSubPushDecodingError(.missingField, "the push message has no messageId")
        }
        let publishTime = try Self.agreeing(
            message.publishTime, message.publishTimeSnakeCase, "publishTime", "publish_time")
        guard let text = message.data else {
            throw PubSubPushDecodingError(.missingField, "the push message has no data")
        }
        guard let data = Self.decodeBase64(text) else {
            throw PubSubPushDecodingError(.dataNotBase64, "message.data is not standard base64")
        }
        guard let subscription = wire.subscription, !subscription.isEmpty else {
            throw PubSubPushDecodingError(.missingField, "the push body has no subscription")
        }
        self.init(
            messageID: messageID, publishTime: publishTime, data: data, attributes: message.attributes ?? [:],
            subscription: subscription)
    }

    /// `data` decoded as a Real-time Developer Notification; throws as
    /// `DeveloperNotification.init(json:maxBytes:)` does.
    public func developerNotification(maxBytes: Int = DeveloperNotification.defaultMaxBytes)
        throws(PubSubPushDecodingError) -> DeveloperNotification
    {
        try DeveloperNotification(json: data, maxBytes: maxBytes)
    }

    /// The members read, every one optional so that each absence gets its own message.
    private struct Wire: Decodable {
        struct Message: Decodable {
            var data: String?
            var messageId: String?
            var messageIdSnakeCase: String?
            var publishTime: String?
            var publishTimeSnakeCase: String?
            var attributes: [String: String]?

            enum CodingKeys: String, CodingKey {
                case data, messageId, publishTime, attributes
                case messageIdSnakeCase = "message_id"
                case publishTimeSnakeCase = "publish_time"
            }
        }

        var message: Message?
        var subscription: String?
    }

    /// The value of a member spelled two ways: either one, or both when they are equal.
    private static func agreeing(_ camel: String?, _ snake: String?, _ camelName: String, _ snakeName: String)
        throws(PubSubPushDecodingError) -> String?
    {
        if let camel, let snake, camel != snake {
            throw PubSubPushDecodingError(.invalidField, "message.\(camelName) and message.\(snakeName) differ")
        }
        return camel ?? snake
    }

    /// Standard base64 (RFC 4648 §4) with or without `=` padding; nil for anything else,
    /// whitespace and the URL-safe alphabet included.
    static func decodeBase64(_ text: String) -> [UInt8]? {
        var body = Substring(text)
        var padding = 0
        while body.last == "=" && padding < 2 {
            body.removeLast()
            padding += 1
        }
        let valid = body.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                true
            default: false
            }
        }
        let remainder = body.utf8.count % 4
        guard valid, remainder != 1, padding == 0 || (remainder + padding) % 4 == 0 else { return nil }
        return Data(base64Encoded: String(body) + String(repeating: "=", count: (4 - remainder) % 4)).map {
            [UInt8]($0)
        }
    }
}
