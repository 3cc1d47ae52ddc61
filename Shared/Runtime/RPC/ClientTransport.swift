public import Wire

/// How a client reaches a service's methods, named by their generated descriptors
/// (`LedgerRPC.getSubscription`, …): over TCP (`RPCClient`) or in process
/// (`InProcessTransport`, the server's router called directly, held to the same admission and
/// deadlines). The generated clients (`LedgerClient`, …) take any transport.
public protocol ClientTransport: Sendable {
    /// Calls a unary method. The deadline is the earliest of `timeout` and the deadline of the
    /// call being served (inside a handler); with neither, the transport's default.
    func call<Request, Response>(
        _ method: UnaryMethod<Request, Response>, _ request: Request, timeout: Duration?
    ) async throws(RPCError) -> Response

    /// Starts a server-streaming call; its messages are serialized `Response`s. Without a
    /// timeout it lasts until the server ends it or the stream is cancelled or dropped.
    func serverStream<Request, Response>(
        _ method: ServerStreamMethod<Request, Response>, _ request: Request, timeout: Duration?
    ) -> RPCResponseStream
}

extension ClientTransport {
    /// Calls a unary method with the transport's default deadline.
    public func call<Request, Response>(_ method: UnaryMethod<Request, Response>, _ request: Request)
        async throws(RPCError) -> Response
    {
        try await call(method, request, timeout: nil)
    }

    /// Starts a server-streaming call without a timeout.
    public func serverStream<Request, Response>(_ method: ServerStreamMethod<Request, Response>, _ request: Request)
        -> RPCResponseStream
    {
        serverStream(method, request, timeout: nil)
    }
}

extension RPCClient: ClientTransport {}
