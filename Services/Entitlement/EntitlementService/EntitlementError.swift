/// What the entitlement service refuses to answer, and why: a request outside its bounds, a
/// capability the policy does not name where one must be, a policy reload that cannot be done.
/// Thrown by the methods' own code; the RPC layer answers with the status each stands for
/// (`EntitlementMethods.status(of:)`, the one place that says which).
public struct EntitlementError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Known: String, Sendable {
            case badRequest, overBudget, unknownCapability, noPolicyFile, policyRefused, behind
        }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// A request that is not well-formed or has a field out of its bounds.
        public static let badRequest = Code(.badRequest)
        /// A request that would cost more to read than the decode budget in force allows.
        public static let overBudget = Code(.overBudget)
        /// A capability the policy does not name, where the answer is about that capability alone.
        public static let unknownCapability = Code(.unknownCapability)
        /// A policy reload asked of a service that has no policy file.
        public static let noPolicyFile = Code(.noPolicyFile)
        /// A policy reload refused (`PolicyError` is the cause): the policy in force stays.
        public static let policyRefused = Code(.policyRefused)
        /// A read asked for a feed position (`min_position`) the view did not reach in time.
        public static let behind = Code(.behind)

        /// The code in snake case, as logs print it.
        public var description: String {
            switch known {
            case .badRequest: "bad_request"
            case .overBudget: "over_budget"
            case .unknownCapability: "unknown_capability"
            case .noPolicyFile: "no_policy_file"
            case .policyRefused: "policy_refused"
            case .behind: "behind"
            }
        }
    }

    /// What kind of problem it is.
    public let code: Code
    /// What is wrong, for the caller (it travels on the wire).
    public let message: String
    /// The error behind it, if another layer's (a refused policy's `PolicyError`); never sent.
    public let cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { message }

    public static func == (lhs: EntitlementError, rhs: EntitlementError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }
}
