/// Thrown by an inline handler that cannot answer on the event loop now (a read waiting for a
/// write to reach it): the call goes on as a deferred one, answered later from any thread
/// through the responder `start` is given, under the call's deadline. The inline answer stays
/// the fast path; only the calls that throw this pay for a deferred call.
public struct RPCHandOff: Error {
    public let start: @Sendable (RPCRequestContext, RPCResponder) -> Void

    public init(_ start: @escaping @Sendable (RPCRequestContext, RPCResponder) -> Void) { self.start = start }
}
