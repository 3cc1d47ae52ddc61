public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// One request of a store API client, before it is sent: method, percent-encoded path, query and
/// JSON body, and the words that name it in errors.
public struct HTTPCall: Sendable {
    /// The method, e.g. `GET`.
    public var method: String
    /// The path below the base URL's own path, already percent-encoded, starting with `/`.
    public var path: String
    /// The query parameters in order; names are sent as they are, values percent-encoded.
    public var query: [(name: String, value: String)]
    /// The JSON body, sent with `Content-Type: application/json`; nil for none.
    public var body: Data?
    /// What errors call the request: `METHOD /path` unless given, for paths that hold a secret.
    public var summary: String

    /// A call of `method` on `path` (percent-encoded); `summary` defaults to `METHOD path`.
    public init(
        method: String, path: String, query: [(name: String, value: String)] = [], body: Data? = nil,
        summary: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.body = body
        self.summary = summary ?? method + " " + path
    }

    /// The full URL of the call below `base` (whose trailing slashes are dropped), or nil when
    /// the parts do not make one.
    public func url(below base: URL) -> URL? {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: false) else { return nil }
        var basePath = components.percentEncodedPath
        while basePath.hasSuffix("/") { basePath.removeLast() }
        components.percentEncodedPath = basePath + path
        components.percentEncodedQuery =
            query.isEmpty
            ? nil : query.map { $0.name + "=" + PercentEncoding.unreserved($0.value) }.joined(separator: "&")
        return components.url
    }

    /// A `URLRequest` for the call below `base`, with `Accept: application/json`, the body and its
    /// content type, and `timeout` as its timeout; nil when the parts do not make a URL.
    public func urlRequest(below base: URL, timeout: Duration) -> URLRequest? {
        guard let url = url(below: base) else { return nil }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = timeout.timeInterval
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }
}
