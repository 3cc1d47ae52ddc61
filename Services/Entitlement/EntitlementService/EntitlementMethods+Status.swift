public import Wire

/// The one place the entitlement service's errors become wire statuses: the methods throw their
/// own errors (`EntitlementError`) and the view's (`ViewError`); the RPC layer answers a call that
/// failed with one with the status named here.
extension EntitlementMethods {
    /// The status an `EntitlementError` stands for, with its message.
    static func status(of error: EntitlementError) -> RPCError {
        let code: StatusCode =
            switch error.code {
            case .overBudget: .resourceExhausted
            case .unknownCapability: .notFound
            case .noPolicyFile, .policyRefused: .failedPrecondition
            case .behind: .unavailable
            default: .invalidArgument
            }
        return RPCError(code, error.message, cause: error.cause)
    }

    /// The status a `ViewError` stands for, with its message.
    static func status(of error: ViewError) -> RPCError {
        let code: StatusCode =
            switch error.code {
            case .overBudget: .resourceExhausted
            case .feedMismatch: .failedPrecondition
            case .feedEnded: .unavailable
            default: .invalidArgument
            }
        return RPCError(code, error.message)
    }
}

extension EntitlementError: RPCErrorConvertible {
    public var rpcError: RPCError { EntitlementMethods.status(of: self) }
}

extension ViewError: RPCErrorConvertible {
    public var rpcError: RPCError { EntitlementMethods.status(of: self) }
}
