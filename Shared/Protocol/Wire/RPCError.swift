/// The error of a call: a status code, a message for humans and, inside a process, the
/// underlying error. The message travels on the wire; the cause never does.
public struct RPCError: Error, Sendable, CustomStringConvertible, Equatable {
    public var code: StatusCode
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: StatusCode, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { message.isEmpty ? code.name : "\(code.name): \(message)" }

    public static func == (lhs: RPCError, rhs: RPCError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }
}

/// An error of domain code that knows the status it stands for. Domain code throws its own
/// errors; the RPC layer answers a call that failed with one with `rpcError`.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}
