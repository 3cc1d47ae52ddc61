import RPC
import SubctlKit
import Wire

/// A test's transport that answers from memory by method name, in bytes: a unary answer, or a
/// stream's messages and its end. As a `ClientTransport` it gives subctl what a service would.
protocol BytesTransport: ClientTransport {
    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8]
    /// The stream's messages and how it ends (nil: OK).
    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?)
}

extension BytesTransport {
    func call<Request, Response>(_ method: UnaryMethod<Request, Response>, _ request: Request, timeout: Duration?)
        async throws(RPCError) -> Response
    {
        let bytes: [UInt8]
        do {
            bytes = try await unary(method.name, request: request.serialized(), timeout: timeout)
        } catch {
            throw Self.status(error)
        }
        return try Response(serialized: bytes)
    }

    func serverStream<Request, Response>(
        _ method: ServerStreamMethod<Request, Response>, _ request: Request, timeout: Duration?
    ) -> RPCResponseStream {
        let (messages, end) = stream(method.name, request: request.serialized(), timeout: timeout)
        return RPCResponseStream(messages: messages, end: end.map(Self.status))
    }

    /// The status a service would have answered for `error` (subctl reads it back as `error`).
    static func status(_ error: SubctlError) -> RPCError {
        RPCError(error.code.status ?? .unknown, error.message)
    }
}
