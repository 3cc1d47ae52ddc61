public import Wire

/// What the ledger refuses, and why. Thrown by the ledger's domain code; the RPC layer answers
/// with the status each stands for (`code`), in the one place the ledger's methods map it
/// (`LedgerMethods`).
public enum LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
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

    /// The status the error stands for.
    public var code: StatusCode {
        switch self {
        case .invalidArgument: .invalidArgument
        case .notFound: .notFound
        case .failedPrecondition: .failedPrecondition
        case .resourceExhausted: .resourceExhausted
        case .unavailable: .unavailable
        }
    }

    /// The message for humans.
    public var message: String {
        switch self {
        case .invalidArgument(let message), .notFound(let message), .failedPrecondition(let message),
            .resourceExhausted(let message), .unavailable(let message):
            message
        }
    }

    public var description: String { message.isEmpty ? code.name : "\(code.name): \(message)" }
}
