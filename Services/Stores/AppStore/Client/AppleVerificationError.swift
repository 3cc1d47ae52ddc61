/// Why Apple signed data was refused. The message says what was wrong and never repeats the
/// payload, a certificate or a signature.
public struct AppleVerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of refusal; `retryable` alone means "try again later", every other code means
    /// the data is not acceptable as it is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Known: String, Sendable {
            case malformed, unsupportedAlgorithm, badChain, badCertificate, badSignature, wrongApp,
                wrongEnvironment, retryable
        }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// Not a compact JWS, not base64url, not JSON, too large, or missing a required field.
        public static let malformed = Code(.malformed)
        /// `alg` is not ES256.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// `x5c` is missing or not three certificates, or they do not chain to a trust anchor.
        public static let badChain = Code(.badChain)
        /// A certificate does not parse, lacks Apple's OID, has the wrong key, or was not valid
        /// at the validation time.
        public static let badCertificate = Code(.badCertificate)
        /// The ES256 signature does not verify.
        public static let badSignature = Code(.badSignature)
        /// Another app's data: `bundleId` or, in Production, `appAppleId` differ.
        public static let wrongApp = Code(.wrongApp)
        /// Signed for another environment than the one configured.
        public static let wrongEnvironment = Code(.wrongEnvironment)
        /// An online check could not be completed; the data may be fine.
        public static let retryable = Code(.retryable)

        /// The code in snake case, as logs, metrics and exit messages print it.
        public var description: String {
            switch known {
            case .malformed: "malformed"
            case .unsupportedAlgorithm: "unsupported_algorithm"
            case .badChain: "bad_chain"
            case .badCertificate: "bad_certificate"
            case .badSignature: "bad_signature"
            case .wrongApp: "wrong_app"
            case .wrongEnvironment: "wrong_environment"
            case .retryable: "retryable"
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
