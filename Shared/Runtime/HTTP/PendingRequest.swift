/// What the server keeps for one request between libmicrohttpd's calls to the access handler:
/// the route it resolved to and the body read so far. Only the connection's thread touches it;
/// libmicrohttpd holds it retained in the connection's `con_cls` until the request completes.
final class PendingRequest {
    /// The handler resolved when the headers arrived.
    let handler: HTTPHandler
    /// The body bytes read so far, while under the limit.
    private(set) var body: [UInt8] = []
    /// Whether more than `limit` bytes arrived; the body is then dropped and the rest ignored.
    private(set) var isOverLimit = false
    /// Bytes dropped past the limit.
    private var dropped = 0
    private let limit: Int
    /// How much past the limit a body may go and still be answered 413 when it ends.
    static let slack = 64 * 1024
    /// Whether more than `slack` bytes past the limit have arrived: the connection is to be closed.
    var isPastSlack: Bool { dropped > Self.slack }

    /// A request for `handler` that accepts at most `limit` body bytes; `expectedLength` is the
    /// `Content-Length` when known (and within the limit), to size the buffer once.
    init(handler: @escaping HTTPHandler, limit: Int, expectedLength: Int?) {
        self.handler = handler
        self.limit = limit
        if let expectedLength { body.reserveCapacity(expectedLength) }
    }

    /// Appends the next piece of the body, or marks the request over the limit.
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard !isOverLimit else {
            dropped += bytes.count
            return
        }
        guard body.count + bytes.count <= limit else {
            isOverLimit = true
            dropped = body.count + bytes.count - limit
            body = []
            return
        }
        body.append(contentsOf: bytes)
    }
}
