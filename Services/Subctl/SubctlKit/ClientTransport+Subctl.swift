public import RPC
public import Wire

/// What subctl calls through a transport (`RPCClient` to a service, a test's own): methods by
/// their full name, as the catalog knows them, with the call's status as `SubctlError.Code.rpc`.
extension ClientTransport {
    /// Sends one serialized request and returns the response bytes.
    public func callBytes(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError)
        -> [UInt8]
    {
        do {
            return try await call(
                UnaryMethod<RawMessage, RawMessage>(method), RawMessage(bytes: request), timeout: timeout
            )
            .bytes
        } catch {
            throw SubctlError(error)
        }
    }

    /// Sends one serialized request and calls `onMessage` with each stream message, in order,
    /// until the stream ends or `onMessage` returns false (then the call is cancelled: the rest
    /// of the stream is not read). Throws the stream's status, or what `onMessage` threw.
    public func readStream(
        _ method: String, request: [UInt8], timeout: Duration?, onMessage: ([UInt8]) throws(SubctlError) -> Bool
    ) async throws(SubctlError) {
        let stream = serverStream(
            ServerStreamMethod<RawMessage, RawMessage>(method), RawMessage(bytes: request), timeout: timeout)
        var messages = stream.makeAsyncIterator()
        while true {
            let message: [UInt8]?
            do {
                message = try await messages.next()
            } catch {
                throw SubctlError(error)
            }
            guard let message else { return }
            guard try onMessage(message) else { return stream.cancel() }
        }
    }

    /// Calls a unary method with typed messages and returns the answer together with the bytes
    /// it was decoded from (for `--json`, which prints them as `call` does). Throws `dataLoss`
    /// when the answer is not a `Response`.
    public func call<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ request: Request, as: Response.Type = Response.self, timeout: Duration?
    ) async throws(SubctlError) -> (response: Response, bytes: [UInt8]) {
        let bytes = try await callBytes(method, request: request.serialized(), timeout: timeout)
        do {
            return (try Response(serialized: bytes), bytes)
        } catch {
            throw SubctlError(.dataLoss, error.message)
        }
    }
}

extension CallOptions {
    /// A client of `address`, with mutual TLS when `tls` is set; it connects on the first call.
    /// Throws when the TLS files cannot be loaded. Shut it down when done.
    public func client() throws(SubctlError) -> RPCClient {
        let tls = self.tls.map {
            TLSConfiguration(certificatePath: $0.certificatePath, keyPath: $0.keyPath, caPath: $0.caPath)
        }
        do {
            return try RPCClient(endpoints: [address], tls: tls)
        } catch {
            throw SubctlError(error)
        }
    }
}
