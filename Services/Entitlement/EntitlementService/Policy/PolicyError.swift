/// Why a product policy was refused: the file could not be read, or a line of it is wrong.
/// `line` names the line (from 1) where one is to blame; the message says what is wrong with
/// it. A refused policy changes nothing: the policy in force stays.
public struct PolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Known: String, Sendable {
            case unreadable, tooLarge, malformed, unknownStore, unknownState, stateNeverAllowed, badAccessValue,
                duplicateAccess, duplicateCapability, duplicateProduct, emptyCapability, productOutsideCapability,
                badCapabilityName, badProductID, badBasePlanID, noCapabilities, badDuration
        }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// The file cannot be opened or read.
        public static let unreadable = Code(.unreadable)
        /// More than `ProductPolicy.maximumBytes` bytes or `ProductPolicy.maximumLines` lines.
        public static let tooLarge = Code(.tooLarge)
        /// A line that is none of the forms the format knows, or has too many or too few words.
        public static let malformed = Code(.malformed)
        /// A product line of a store other than `apple` or `google`.
        public static let unknownStore = Code(.unknownStore)
        /// An `access` line naming a state that is not a normalized state name.
        public static let unknownState = Code(.unknownState)
        /// `access expired yes`, `access revoked yes` or `access pending yes`.
        public static let stateNeverAllowed = Code(.stateNeverAllowed)
        /// An `access` line whose rule is not `yes` or `no`.
        public static let badAccessValue = Code(.badAccessValue)
        /// A second `access` line for the same state.
        public static let duplicateAccess = Code(.duplicateAccess)
        /// A second `capability` line with the same name.
        public static let duplicateCapability = Code(.duplicateCapability)
        /// The same product twice in one capability.
        public static let duplicateProduct = Code(.duplicateProduct)
        /// A capability that lists no products.
        public static let emptyCapability = Code(.emptyCapability)
        /// A product line before any `capability` line, or after an `access` line.
        public static let productOutsideCapability = Code(.productOutsideCapability)
        /// A capability name with a character or length the format does not allow.
        public static let badCapabilityName = Code(.badCapabilityName)
        /// A product id with a character or length the format does not allow.
        public static let badProductID = Code(.badProductID)
        /// A base plan id with a character or length the format does not allow, or one on an
        /// Apple product.
        public static let badBasePlanID = Code(.badBasePlanID)
        /// A policy without a single capability (an empty file, or only comments and rules).
        public static let noCapabilities = Code(.noCapabilities)
        /// A `duration` that is not a whole number of days (`90d`), hours (`12h`) or weeks
        /// (`4w`) from 1 hour to 100 years, or two durations for one product.
        public static let badDuration = Code(.badDuration)

        /// The code in snake case, as logs print it.
        public var description: String {
            switch known {
            case .unreadable: "unreadable"
            case .tooLarge: "too_large"
            case .malformed: "malformed"
            case .unknownStore: "unknown_store"
            case .unknownState: "unknown_state"
            case .stateNeverAllowed: "state_never_allowed"
            case .badAccessValue: "bad_access_value"
            case .duplicateAccess: "duplicate_access"
            case .duplicateCapability: "duplicate_capability"
            case .duplicateProduct: "duplicate_product"
            case .emptyCapability: "empty_capability"
            case .productOutsideCapability: "product_outside_capability"
            case .badCapabilityName: "bad_capability_name"
            case .badProductID: "bad_product_id"
            case .badBasePlanID: "bad_base_plan_id"
            case .noCapabilities: "no_capabilities"
            case .badDuration: "bad_duration"
            }
        }
    }

    /// What kind of problem it is.
    public let code: Code
    /// The line to blame, counted from 1; `nil` for a problem of the whole file.
    public let line: Int?
    /// What is wrong, for an operator.
    public let message: String
    /// The file, when the policy was read from one.
    public let path: String?

    /// A problem of `code` on `line` (or of the whole file), read from `path` (or from text).
    public init(_ code: Code, line: Int?, _ message: String, path: String? = nil) {
        self.code = code
        self.line = line
        self.message = message
        self.path = path
    }

    /// This error, as found in the file at `path`.
    func reading(_ path: String) -> PolicyError { PolicyError(code, line: line, message, path: path) }

    /// `PATH, line N: message`, leaving out what is not known.
    public var description: String {
        switch (path, line) {
        case (let path?, let line?): "\(path), line \(line): \(message)"
        case (let path?, nil): "\(path): \(message)"
        case (nil, let line?): "line \(line): \(message)"
        case (nil, nil): message
        }
    }
}
