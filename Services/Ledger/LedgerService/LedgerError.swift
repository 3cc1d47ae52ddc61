public import Wire

/// What the ledger refuses, and why. Thrown by the ledger's domain code; the RPC layer answers
/// with the status each stands for (`rpcError`).
public enum LedgerError: Error, Sendable, Equatable, CustomStringConvertible, RPCErrorConvertible {
    /// The request is not one the ledger accepts: a field missing, too long, out of range.
    case invalidArgument(String)
    /// What the request names is not in the ledger.
    case notFound(String)
    /// The request conflicts with what the ledger holds (an idempotency key used with other content).
    case failedPrecondition(String)
    /// The ledger cannot take it now: the disk is full.
    case resourceExhausted(String)
    /// The database cannot be reached or is busy; the same request may pass later.
    case unavailable(String)

    public var rpcError: RPCError {
        switch self {
        case .invalidArgument(let message): RPCError(.invalidArgument, message)
        case .notFound(let message): RPCError(.notFound, message)
        case .failedPrecondition(let message): RPCError(.failedPrecondition, message)
        case .resourceExhausted(let message): RPCError(.resourceExhausted, message)
        case .unavailable(let message): RPCError(.unavailable, message)
        }
    }

    public var description: String { rpcError.description }
}
