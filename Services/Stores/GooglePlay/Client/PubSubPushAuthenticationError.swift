/// Why a Pub/Sub push was not authenticated. The message says what was wrong and never repeats
/// the token; values read from an unverified token (an `alg`, a `kid`, a claim) are cut short
/// and stripped to printable ASCII.
public struct PubSubPushAuthenticationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of refusal; `retryable` alone means "try again later" (answer 503 so Pub/Sub
    /// redelivers), every other code means the push is not from Google as configured (401).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Known: String, Sendable {
            case missing, malformed, unsupportedAlgorithm, unknownKey, badSignature, wrongIssuer, wrongAudience,
                wrongEmail, emailNotVerified, expired, notYetValid, retryable
        }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// No `Authorization` header, another scheme than `Bearer`, or an empty token.
        public static let missing = Code(.missing)
        /// Not a compact JWS, not base64url or JSON, too large, no `kid`, a required claim absent
        /// or of the wrong type, or a lifetime Google does not issue (`exp` not after `iat`, or
        /// longer than the configured maximum).
        public static let malformed = Code(.malformed)
        /// `alg` is absent or not RS256 (`none` and HS256 included), the header has `crit`
        /// parameters, or the selected key is published for another algorithm.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// No key of the signing key set has the token's `kid`, even after refreshing the set.
        public static let unknownKey = Code(.unknownKey)
        /// The RS256 signature does not verify with the key of that `kid`.
        public static let badSignature = Code(.badSignature)
        /// `iss` is not `https://accounts.google.com` or `accounts.google.com`.
        public static let wrongIssuer = Code(.wrongIssuer)
        /// `aud` is not the configured audience.
        public static let wrongAudience = Code(.wrongAudience)
        /// `email` is not the configured push service account.
        public static let wrongEmail = Code(.wrongEmail)
        /// `email_verified` is not true.
        public static let emailNotVerified = Code(.emailNotVerified)
        /// `exp` has passed (beyond the allowed clock skew).
        public static let expired = Code(.expired)
        /// `iat` is in the future (beyond the allowed clock skew).
        public static let notYetValid = Code(.notYetValid)
        /// The signing keys could not be fetched or read; the push may be fine.
        public static let retryable = Code(.retryable)

        /// The code in snake case, as logs, metrics and exit messages print it.
        public var description: String {
            switch known {
            case .missing: "missing"
            case .malformed: "malformed"
            case .unsupportedAlgorithm: "unsupported_algorithm"
            case .unknownKey: "unknown_key"
            case .badSignature: "bad_signature"
            case .wrongIssuer: "wrong_issuer"
            case .wrongAudience: "wrong_audience"
            case .wrongEmail: "wrong_email"
            case .emailNotVerified: "email_not_verified"
            case .expired: "expired"
            case .notYetValid: "not_yet_valid"
            case .retryable: "retryable"
            }
        }
    }

    /// What kind of refusal this is.
    public let code: Code
    /// What was wrong, for logs.
    public let message: String

    /// An error with `code` and `message`; the message must not contain the token.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether the same push may be accepted later (the signing keys could not be fetched).
    public var isRetryable: Bool { code == .retryable }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
