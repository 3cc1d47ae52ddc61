/// Answers one request. Called on one of the server's threads once the whole body has arrived;
/// it may block briefly, but every moment it blocks keeps that thread from serving other connections.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse
