public import Foundation

/// The claims of a Pub/Sub push token that `PubSubPushAuthenticator` verified: who signed it
/// and for whom, and when it is valid.
public struct PubSubPushToken: Sendable, Hashable {
    /// The `kid` of the Google key that signed it.
    public var keyID: String
    /// `iss`: `https://accounts.google.com` or `accounts.google.com`.
    public var issuer: String
    /// `aud`: the configured audience.
    public var audience: String
    /// `email`: the push service account, as the token spells it.
    public var email: String
    /// `sub`: the service account's unique id, when present.
    public var subject: String?
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date

    /// Claims with these values.
    public init(
        keyID: String, issuer: String, audience: String, email: String, subject: String?, issuedAt: Date,
        expiresAt: Date
    ) {
        self.keyID = keyID
        self.issuer = issuer
        self.audience = audience
        self.email = email
        self.subject = subject
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}
