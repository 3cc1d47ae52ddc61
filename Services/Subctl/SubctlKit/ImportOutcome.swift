import Foundation

/// What importing one subscription came to; one line of the progress file.
public struct ImportOutcome: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Equatable, Codable {
        /// Restored and linked to the row's account.
        case imported
        /// The ledger already held it for the row's account.
        case alreadyPresent = "already_present"
        /// Another account holds it; `policy` says what the claim policy did.
        case otherAccount = "other_account"
        /// The verifier refused it; `reason` says why.
        case refused
    }

    /// The item's id (`apple/ENV/ID`, `google/PACKAGE/TOKEN`).
    public var id: String
    public var kind: Kind
    /// For `otherAccount`: transferred (moved to the row's account), kept (stays with the other
    /// account) or refused.
    public var policy: String?
    /// For `otherAccount`: the account that holds or held it.
    public var otherAccountID: String?
    /// For `refused`: the RPC status and message.
    public var reason: String?
    /// The environment the App Store has the purchase in (`production`, `sandbox`), when it is
    /// not the one the file gave (the ledger records the App Store's).
    public var environment: String?

    public init(
        id: String, kind: Kind, policy: String? = nil, otherAccountID: String? = nil, reason: String? = nil,
        environment: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.policy = policy
        self.otherAccountID = otherAccountID
        self.reason = reason
        self.environment = environment
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, policy, reason, environment
        case otherAccountID = "other_account_id"
    }
}
