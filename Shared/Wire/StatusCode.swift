/// A call's outcome code. Names and numbers are gRPC's; codes this version does not know are
/// kept by number so they can be passed on and printed.
public struct StatusCode: Hashable, Sendable, CustomStringConvertible {
    private enum Known: Int, CaseIterable {
        case ok = 0
        case cancelled, unknown, invalidArgument, deadlineExceeded, notFound, alreadyExists
        case permissionDenied, resourceExhausted, failedPrecondition, aborted, outOfRange, unimplemented
        case internalError, unavailable, dataLoss, unauthenticated
    }

    /// The number carried on the wire.
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }
    private init(_ known: Known) { rawValue = known.rawValue }

    public static let ok = StatusCode(.ok)
    public static let cancelled = StatusCode(.cancelled)
    public static let unknown = StatusCode(.unknown)
    public static let invalidArgument = StatusCode(.invalidArgument)
    public static let deadlineExceeded = StatusCode(.deadlineExceeded)
    public static let notFound = StatusCode(.notFound)
    public static let alreadyExists = StatusCode(.alreadyExists)
    public static let permissionDenied = StatusCode(.permissionDenied)
    public static let resourceExhausted = StatusCode(.resourceExhausted)
    public static let failedPrecondition = StatusCode(.failedPrecondition)
    public static let aborted = StatusCode(.aborted)
    public static let outOfRange = StatusCode(.outOfRange)
    public static let unimplemented = StatusCode(.unimplemented)
    public static let internalError = StatusCode(.internalError)
    public static let unavailable = StatusCode(.unavailable)
    public static let dataLoss = StatusCode(.dataLoss)
    public static let unauthenticated = StatusCode(.unauthenticated)

    /// Every code this version knows, in wire order.
    public static let allKnown: [StatusCode] = Known.allCases.map(StatusCode.init)

    /// The gRPC spelling: `OK`, `INVALID_ARGUMENT`, …; `CODE_<n>` for unknown numbers.
    public var name: String {
        switch Known(rawValue: rawValue) {
        case .ok: "OK"
        case .cancelled: "CANCELLED"
        case .unknown: "UNKNOWN"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .deadlineExceeded: "DEADLINE_EXCEEDED"
        case .notFound: "NOT_FOUND"
        case .alreadyExists: "ALREADY_EXISTS"
        case .permissionDenied: "PERMISSION_DENIED"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .failedPrecondition: "FAILED_PRECONDITION"
        case .aborted: "ABORTED"
        case .outOfRange: "OUT_OF_RANGE"
        case .unimplemented: "UNIMPLEMENTED"
        case .internalError: "INTERNAL"
        case .unavailable: "UNAVAILABLE"
        case .dataLoss: "DATA_LOSS"
        case .unauthenticated: "UNAUTHENTICATED"
        case nil: "CODE_\(rawValue)"
        }
    }

    public var description: String { name }
}
