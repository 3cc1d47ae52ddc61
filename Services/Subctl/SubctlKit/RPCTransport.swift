/// What subctl needs from a connection to a service. The executable adapts the RPC module's
/// client to it; tests use a fake.
public protocol RPCTransport: Sendable {
    /// Sends one request and returns the response bytes. Throws the call's status as
    /// `SubctlError.Code.rpc`.
    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8]

    /// Sends one request and calls `onMessage` with each stream message, in order, until the
    /// stream ends. Throws the stream's status as `SubctlError.Code.rpc`, or what `onMessage` threw.
    func serverStream(
        _ method: String, request: [UInt8], timeout: Duration?, onMessage: ([UInt8]) throws(SubctlError) -> Void
    ) async throws(SubctlError)
}
