public import Wire

/// Registration by the generated method descriptors (`LedgerRPC.getHistory`, …): the name and the
/// request and response types come from the schema, so a wrong pair does not compile.
extension RPCRouter {
    /// Registers a raw handler for `method` (see `register(_:_:limits:prefetch:)`). A caller with
    /// the read-only role, where the method changes nothing, gets its answers decoded as the
    /// method's response, redacted and encoded again; operators' answers are the handler's bytes.
    public func register<Method: RPCMethod>(
        _ method: Method, _ handler: RPCHandler, limits: RPCMethodLimits = .standard,
        prefetch: RPCPrefetch? = nil
    ) {
        register(
            method.name, handler, readOnly: handler.redacting(Method.Response.self), limits: limits, prefetch: prefetch)
    }

    /// Registers an in-memory method that runs on the event loop thread.
    public func inline<Request, Response>(
        _ method: UnaryMethod<Request, Response>, limits: RPCMethodLimits = .standard,
        _ body: @escaping @Sendable (Request) throws -> Response
    ) {
        inline(method.name, limits: limits, body)
    }

    /// Registers a method that runs as a task.
    public func unary<Request, Response>(
        _ method: UnaryMethod<Request, Response>, limits: RPCMethodLimits = .standard,
        _ body: @escaping @Sendable (RPCRequestContext, Request) async throws -> Response
    ) {
        unary(method.name, limits: limits, body)
    }

    /// Registers a method that starts on the event loop thread and answers through `respond`.
    public func deferred<Request, Response>(
        _ method: UnaryMethod<Request, Response>, limits: RPCMethodLimits = .standard,
        _ body:
            @escaping @Sendable (
                RPCRequestContext, Request, _ respond: @escaping @Sendable (Result<Response, any Error>) -> Void
            ) -> Void
    ) {
        deferred(method.name, limits: limits, body)
    }

    /// Registers a server-streaming method.
    public func serverStream<Request, Response>(
        _ method: ServerStreamMethod<Request, Response>, limits: RPCMethodLimits = .standard,
        _ body: @escaping @Sendable (RPCRequestContext, Request, ServerStreamSender<Response>) async throws -> Void
    ) {
        serverStream(method.name, limits: limits, body)
    }
}

extension RPCClient {
    /// Calls a unary method by its generated descriptor.
    public func call<Request, Response>(
        _ method: UnaryMethod<Request, Response>, _ request: Request, timeout: Duration? = nil
    ) async throws(RPCError) -> Response {
        try await call(method.name, request, as: Response.self, timeout: timeout)
    }

    /// Starts a server-streaming call by its generated descriptor; the stream's messages are
    /// serialized `Response`s.
    public func serverStream<Request, Response>(
        _ method: ServerStreamMethod<Request, Response>, _ request: Request, timeout: Duration? = nil
    ) -> RPCResponseStream {
        serverStream(method.name, request: request.serialized(), timeout: timeout)
    }
}
