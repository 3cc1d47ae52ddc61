/// A failed PostgreSQL call, drained from libpq at the call site.
///
/// `message` is the server's primary message (never its DETAIL, which can echo row values) or
/// libpq's own text with any password redacted, so the description is safe to log.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What kind of call failed.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: Hashable, Sendable {
            case invalidURL, connection, query, decoding, poolClosed
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The connection URL could not be parsed.
        public static let invalidURL = Code(.invalidURL)
        /// Connecting failed, or the connection broke during a call.
        public static let connection = Code(.connection)
        /// The server refused a statement; `sqlState` says why.
        public static let query = Code(.query)
        /// A column was missing or did not hold the type asked for.
        public static let decoding = Code(.decoding)
        /// The pool was closed.
        public static let poolClosed = Code(.poolClosed)

        public var description: String {
            switch wrapped {
            case .invalidURL: "invalid connection URL"
            case .connection: "connection failed"
            case .query: "query failed"
            case .decoding: "cannot decode result"
            case .poolClosed: "pool closed"
            }
        }
    }

    /// What kind of call failed.
    public let code: Code
    /// The five-character SQLSTATE from the server (`23505` unique violation, `40001`
    /// serialization failure, `53100` disk full, …), when the server sent one.
    public let sqlState: String?
    /// What went wrong, safe to log.
    public let message: String

    /// Makes an error; the library makes these, tests and fakes may too.
    public init(code: Code, sqlState: String? = nil, message: String) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
    }

    /// A unique or primary-key constraint rejected the row (SQLSTATE 23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// A serializable or repeatable-read transaction lost a conflict and may be retried from
    /// the start (40001; deadlocks, 40P01, are retryable the same way).
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// The connection is unusable: connecting failed, the socket broke, or the server is shutting
    /// down (SQLSTATE class 08, 57P01…57P03). Retry on a fresh connection.
    public var isConnectionFailure: Bool {
        guard code != .connection else { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// `postgres <code> [<SQLSTATE>]: <message>`.
    public var description: String {
        "postgres \(code)\(sqlState.map { " [\($0)]" } ?? ""): \(message)"
    }
}
