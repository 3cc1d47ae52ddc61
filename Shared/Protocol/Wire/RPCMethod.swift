/// One method of a service, as the generated `…RPC` namespaces declare it: its full name and
/// its request and response types, so that a wrong name or a mismatched pair does not compile.
public protocol RPCMethod: Sendable {
    /// The request message type.
    associatedtype Request: ProtoMessage
    /// The response message type (of each stream message, for a stream).
    associatedtype Response: ProtoMessage
    /// `package.Service/Method`, e.g. `subscriptions.ledger.v1.Ledger/GetHistory`.
    var name: String { get }
    /// Whether the server answers with a stream of responses.
    var isServerStreaming: Bool { get }
}

/// A method with one request and one response.
public struct UnaryMethod<Request: ProtoMessage, Response: ProtoMessage>: RPCMethod {
    public let name: String
    public var isServerStreaming: Bool { false }
    public init(_ name: String) { self.name = name }
}

/// A method with one request and a stream of responses.
public struct ServerStreamMethod<Request: ProtoMessage, Response: ProtoMessage>: RPCMethod {
    public let name: String
    public var isServerStreaming: Bool { true }
    public init(_ name: String) { self.name = name }
}
