public import AppStore

/// `subctl apple …`: offline checks of App Store signed data, for support staff. Nothing is
/// called over the network; the trust anchors come from files the operator names.
public enum AppleCommand: Sendable, Equatable {
    /// `apple verify`: verify a JWS (a notification's `signedPayload`, a `signedTransactionInfo`
    /// or a `signedRenewalInfo`) and print its payload, the payloads signed inside it, and the
    /// verdict.
    case verify(AppleVerifyOptions)

    /// The exit status of each refusal, in the order the usage text lists them. A refusal code
    /// not listed here (one added later) exits with `unlistedRefusalExitCode`.
    public static let exitCodes: [(code: AppleVerificationError.Code, status: Int32)] = [
        (.malformed, 10), (.unsupportedAlgorithm, 11), (.badChain, 12), (.badCertificate, 13),
        (.badSignature, 14), (.wrongApp, 15), (.wrongEnvironment, 16), (.retryable, 17),
    ]

    /// The exit status of a refusal code missing from `exitCodes`.
    public static let unlistedRefusalExitCode: Int32 = 19

    /// The exit status `apple verify` ends with when it refuses data for `code`.
    public static func exitCode(for code: AppleVerificationError.Code) -> Int32 {
        exitCodes.first { $0.code == code }?.status ?? unlistedRefusalExitCode
    }
}
