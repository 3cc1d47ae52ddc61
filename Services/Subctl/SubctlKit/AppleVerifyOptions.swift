public import AppStore
import Foundation

/// What `apple verify` checks and against what: the JWS's source, the trust anchor files, and
/// the app and environment the data must be signed for. Paths are kept as given; nothing is
/// read while parsing.
public struct AppleVerifyOptions: Sendable, Equatable {
    /// Where the JWS comes from.
    public enum Source: Sendable, Equatable {
        /// The JWS given on the command line.
        case argument(String)
        /// `--file PATH`.
        case file(String)
        /// `-`: read standard input.
        case standardInput
    }

    /// What the JWS signs, which decides the payload type and the claims checked.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// An App Store Server Notification V2 `signedPayload`.
        case notification
        /// A `signedTransactionInfo` (or StoreKit 2 `jwsRepresentation`).
        case transaction
        /// A `signedRenewalInfo`.
        case renewal

        /// The kind an unverified payload (JSON bytes) looks like: `notificationType` makes a
        /// notification, `transactionId` a transaction, and otherwise `autoRenewStatus`,
        /// `renewalDate` or `originalTransactionId` renewal info; nil when the bytes are not a
        /// JSON object or have none of these. Only chooses what to verify the data as.
        public static func detect(payload: [UInt8]) -> Kind? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else {
                return nil
            }
            if object["notificationType"] != nil { return .notification }
            if object["transactionId"] != nil { return .transaction }
            if ["autoRenewStatus", "renewalDate", "originalTransactionId"].contains(where: { object[$0] != nil }) {
                return .renewal
            }
            return nil
        }
    }

    public var source: Source
    /// `--root`, in the order given: DER (`.cer`) or PEM files of trust anchors.
    public var rootPaths: [String]
    /// `--bundle`.
    public var bundleID: String
    /// `--env`.
    public var environment: AppleEnvironment
    /// `--app-id`; required for Production.
    public var appAppleID: Int64?
    /// `--kind`; nil to detect it from the payload.
    public var kind: Kind?

    public init(
        source: Source, rootPaths: [String], bundleID: String, environment: AppleEnvironment,
        appAppleID: Int64? = nil, kind: Kind? = nil
    ) {
        self.source = source
        self.rootPaths = rootPaths
        self.bundleID = bundleID
        self.environment = environment
        self.appAppleID = appAppleID
        self.kind = kind
    }
}
