public import RPC
public import Wire

/// A transport that starts a new trace for each call it makes and tells `report` about it
/// before the call goes out: `subctl -v` prints `trace: <id>` on standard error for each, so an
/// operator can follow the call through every service (`subctl trace ID`, the services' logs).
public struct TracedTransport: ClientTransport {
    let base: any ClientTransport
    let report: @Sendable (TraceContext) -> Void

    public init(_ base: any ClientTransport, report: @escaping @Sendable (TraceContext) -> Void) {
        self.base = base
        self.report = report
    }

    public func call<Request, Response>(
        _ method: UnaryMethod<Request, Response>, _ request: Request, timeout: Duration?
    ) async throws(RPCError) -> Response {
        let trace = TraceContext.start()
        report(trace)
        let result = await TraceContext.$current.withValue(trace) {
            () async -> Result<Response, RPCError> in
            do throws(RPCError) {
                return .success(try await base.call(method, request, timeout: timeout))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    public func serverStream<Request, Response>(
        _ method: ServerStreamMethod<Request, Response>, _ request: Request, timeout: Duration?
    ) -> RPCResponseStream {
        let trace = TraceContext.start()
        report(trace)
        return TraceContext.$current.withValue(trace) { base.serverStream(method, request, timeout: timeout) }
    }

    /// `-v` or `--verbose` anywhere on the command line before `--` asks for a `trace: <id>`
    /// line per call; the arguments without it.
    public static func verbose(_ arguments: [String]) -> (verbose: Bool, rest: [String]) {
        let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
        let options = arguments[..<end].filter { $0 != "-v" && $0 != "--verbose" }
        return (options.count != end, options + arguments[end...])
    }
}
