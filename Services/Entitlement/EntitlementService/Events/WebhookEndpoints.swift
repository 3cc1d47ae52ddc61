public import Foundation
import Model

/// One receiver of webhooks, as `WEBHOOK_ENDPOINTS_FILE` names it.
public struct WebhookEndpoint: Sendable, Equatable {
    /// 1 to 64 of `a-z 0-9 _ -`: how operators and metrics name it.
    public let name: String
    public let url: URL
    /// Every delivery is signed with each (two while one replaces the other).
    public let secrets: [WebhookSecret]
    /// The event types it receives (`EventType.matches`); empty: all.
    public let types: [String]
    /// Only events of accounts whose id starts with this; nil: all.
    public let accountPrefix: String?

    /// Whether this endpoint receives an event of `type` about `account`.
    public func wants(type: String, account: String?) -> Bool {
        guard EventType.matches(type, types) else { return false }
        guard let accountPrefix else { return true }
        return account?.hasPrefix(accountPrefix) == true
    }
}

/// The endpoints file: `{"endpoints": [{"name", "url", "secrets", "types"?, "account_prefix"?}]}`.
/// Everything is checked; a file with any fault is refused whole, with a message naming where.
public enum WebhookEndpoints {
    public static let maxFileBytes = 1 << 20
    public static let maxEndpoints = 100
    public static let maxSecrets = 2
    public static let maxTypes = 100

    public static func parse(_ bytes: [UInt8]) throws(WebhookConfigError) -> [WebhookEndpoint] {
        guard bytes.count <= maxFileBytes else {
            throw WebhookConfigError("the endpoints file is \(bytes.count) bytes; at most \(maxFileBytes) are read")
        }
        let root: Any
        do { root = try JSONSerialization.jsonObject(with: Data(bytes)) } catch {
            throw WebhookConfigError("the endpoints file is not JSON")
        }
        guard let object = root as? [String: Any] else {
            throw WebhookConfigError("the endpoints file must be a JSON object with \"endpoints\"")
        }
        try onlyKeys(object, ["endpoints"], "the file")
        guard let list = object["endpoints"] as? [Any] else {
            throw WebhookConfigError("\"endpoints\" must be an array")
        }
        guard list.count <= maxEndpoints else {
            throw WebhookConfigError("\(list.count) endpoints; at most \(maxEndpoints) are allowed")
        }
        var endpoints: [WebhookEndpoint] = []
        for (index, item) in list.enumerated() {
            let endpoint = try self.endpoint(item, "endpoints[\(index)]")
            guard !endpoints.contains(where: { $0.name == endpoint.name }) else {
                throw WebhookConfigError("endpoints[\(index)].name \"\(endpoint.name)\" is used twice")
            }
            endpoints.append(endpoint)
        }
        return endpoints
    }

    static func endpoint(_ item: Any, _ at: String) throws(WebhookConfigError) -> WebhookEndpoint {
        guard let fields = item as? [String: Any] else { throw WebhookConfigError("\(at) must be an object") }
        try onlyKeys(fields, ["name", "url", "secrets", "types", "account_prefix"], at)
        guard let name = fields["name"] as? String, WebhookEndpointName.isValid(name) else {
            throw WebhookConfigError("\(at).name must be 1 to 64 of a-z, 0-9, _ and -")
        }
        guard let text = fields["url"] as? String, text.utf8.count <= 2048, let url = URL(string: text),
            let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host?.isEmpty == false,
            url.user == nil, url.password == nil
        else {
            throw WebhookConfigError("\(at).url must be an http or https URL with a host and no credentials")
        }
        guard let secretTexts = fields["secrets"] as? [Any], (1...maxSecrets).contains(secretTexts.count) else {
            throw WebhookConfigError("\(at).secrets must list 1 or \(maxSecrets) secrets")
        }
        var secrets: [WebhookSecret] = []
        for (index, secret) in secretTexts.enumerated() {
            guard let secret = secret as? String else {
                throw WebhookConfigError("\(at).secrets[\(index)] must be a string")
            }
            do { secrets.append(try WebhookSecret(secret)) } catch {
                throw WebhookConfigError("\(at).secrets[\(index)]: \(error.description)")
            }
        }
        var types: [String] = []
        if let value = fields["types"] {
            guard let list = value as? [Any], list.count <= maxTypes else {
                throw WebhookConfigError("\(at).types must be an array of at most \(maxTypes) event types")
            }
            for (index, type) in list.enumerated() {
                guard let type = type as? String, EventType.isValidPattern(type) else {
                    throw WebhookConfigError(
                        "\(at).types[\(index)] is not an event type or a prefix with .* (subscription.*, access.ended)")
                }
                types.append(type)
            }
        }
        var accountPrefix: String?
        if let value = fields["account_prefix"] {
            guard let prefix = value as? String, (1...256).contains(prefix.utf8.count) else {
                throw WebhookConfigError("\(at).account_prefix must be a string of 1 to 256 bytes")
            }
            accountPrefix = prefix
        }
        return WebhookEndpoint(name: name, url: url, secrets: secrets, types: types, accountPrefix: accountPrefix)
    }

    private static func onlyKeys(_ object: [String: Any], _ known: Set<String>, _ at: String) throws(WebhookConfigError)
    {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw WebhookConfigError("\(at) has an unknown field \"\(unknown.prefix(64))\"")
        }
    }
}
