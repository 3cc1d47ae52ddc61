/// Why the view refused what the ledger sent it, or stopped following the ledger: bytes that do
/// not read as a snapshot chunk or a subscription, more than the decode budget allows, a feed
/// that is not the one the view applied, a feed or snapshot that ended early. The view is left as
/// it was (a snapshot being loaded is abandoned). The RPC methods map it to a wire status
/// (`EntitlementMethods.status(of:)`).
public struct ViewError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Known: String, Sendable {
            case malformed, overBudget, feedMismatch, feedEnded
        }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// Bytes that are not the message they should be: not well-formed protobuf, a field of the
        /// wrong wire type, a missing key, an enum value or a text the schema does not allow.
        public static let malformed = Code(.malformed)
        /// More elements or unknown fields than the decode budget in force allows.
        public static let overBudget = Code(.overBudget)
        /// The ledger's change at the view's position is not the one the view applied.
        public static let feedMismatch = Code(.feedMismatch)
        /// The ledger ended the change feed or a snapshot before it was whole.
        public static let feedEnded = Code(.feedEnded)

        /// The code in snake case, as logs print it.
        public var description: String {
            switch known {
            case .malformed: "malformed"
            case .overBudget: "over_budget"
            case .feedMismatch: "feed_mismatch"
            case .feedEnded: "feed_ended"
            }
        }
    }

    /// What kind of problem it is.
    public let code: Code
    /// What is wrong, naming the message and field.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
