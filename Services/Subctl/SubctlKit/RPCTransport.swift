public import Wire

/// What subctl needs from a connection to a service. The executable adapts the RPC module's
/// client to it; tests use a fake.
public protocol RPCTransport: Sendable {
    /// Sends one request and returns the response bytes. Throws the call's status as
    /// `SubctlError.Code.rpc`.
    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8]

    /// Sends one request and calls `onMessage` with each stream message, in order, until the
    /// stream ends or `onMessage` returns false (then the call is abandoned: the rest of the
    /// stream is not read). Throws the stream's status as `SubctlError.Code.rpc`, or what
    /// `onMessage` threw.
    func serverStream(
        _ method: String, request: [UInt8], timeout: Duration?, onMessage: ([UInt8]) throws(SubctlError) -> Bool
    ) async throws(SubctlError)
}

extension RPCTransport {
    /// Calls a unary method with typed messages, as `RPCClient.call` does, and returns the
    /// answer together with the bytes it was decoded from (for `--json`, which prints them as
    /// `call` does). Throws the call's status as `SubctlError.Code.rpc`, and `dataLoss` when the
    /// answer is not a `Response`.
    public func call<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ request: Request, as: Response.Type = Response.self, timeout: Duration?
    ) async throws(SubctlError) -> (response: Response, bytes: [UInt8]) {
        let bytes = try await unary(method, request: request.serialized(), timeout: timeout)
        do {
            return (try Response(serialized: bytes), bytes)
        } catch {
            throw SubctlError(.dataLoss, error.message)
        }
    }
}
