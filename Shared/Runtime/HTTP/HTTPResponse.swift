/// The answer a handler returns: a status code, headers in the order they are sent, and a body.
public struct HTTPResponse: Sendable {
    /// The status code, e.g. 200.
    public var status: Int
    /// Header names and values, sent in this order. `Content-Length` is added by the server.
    public var headers: [(String, String)]
    /// The response body.
    public var body: [UInt8]

    /// A response with the given status, headers and body.
    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is `text` in UTF-8, with a `Content-Type` header.
    public static func text(
        _ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }

    /// A response whose body is the JSON document `text`, with `Content-Type: application/json`.
    public static func json(_ text: String, status: Int = 200) -> HTTPResponse {
        .text(text, status: status, contentType: "application/json")
    }
}
