import Crypto
import Foundation

/// The Standard Webhooks signature (standardwebhooks.com): HMAC-SHA256 over
/// `<webhook-id>.<webhook-timestamp>.<body>`, sent as `v1,<base64>` in `webhook-signature`, one
/// entry per secret (two while a secret is rotated), separated by spaces.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
    /// The HMAC key: the secret's bytes after `whsec_`, base64-decoded.
    let key: [UInt8]

    public static let prefix = "whsec_"
    /// The specification's bounds on a key, in bytes.
    public static let keyBytes = 24...64

    /// Reads `whsec_<base64 of 24 to 64 bytes>`; throws a message that does not repeat the secret.
    public init(_ text: String) throws(WebhookConfigError) {
        guard text.hasPrefix(Self.prefix) else {
            throw WebhookConfigError("a secret must start with \(Self.prefix)")
        }
        guard let key = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))) else {
            throw WebhookConfigError("a secret is not base64 after \(Self.prefix)")
        }
        guard Self.keyBytes.contains(key.count) else {
            throw WebhookConfigError(
                "a secret's key is \(key.count) bytes; \(Self.keyBytes.lowerBound) to \(Self.keyBytes.upperBound) are allowed"
            )
        }
        self.key = Array(key)
    }

    /// Never the key.
    public var description: String { "whsec_…(\(key.count) bytes)" }

    /// The `v1,<base64>` signature of one delivery.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        var content: [UInt8] = []
        content.reserveCapacity(id.utf8.count + 22 + body.count)
        content.append(contentsOf: id.utf8)
        content.append(UInt8(ascii: "."))
        content.append(contentsOf: String(timestamp).utf8)
        content.append(UInt8(ascii: "."))
        content.append(contentsOf: body)
        return "v1," + Data(Digest.hmacSHA256(key: key, message: content)).base64EncodedString()
    }

    /// The `webhook-signature` header: one entry per secret.
    public static func header(_ secrets: [WebhookSecret], id: String, timestamp: Int64, body: [UInt8]) -> String {
        secrets.map { $0.signature(id: id, timestamp: timestamp, body: body) }.joined(separator: " ")
    }

    /// Whether one entry of `header` is this secret's signature (compared in constant time).
    public func verifies(header: String, id: String, timestamp: Int64, body: [UInt8]) -> Bool {
        let expected = Array(signature(id: id, timestamp: timestamp, body: body).utf8)
        return header.split(separator: " ").contains { Digest.constantTimeEqual(Array($0.utf8), expected) }
    }
}

/// What is wrong with a webhook setting: an endpoints file, a secret.
public struct WebhookConfigError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
