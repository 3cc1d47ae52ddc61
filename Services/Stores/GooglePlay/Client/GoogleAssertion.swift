import Crypto
import Foundation
import HTTPClient

/// The JWT a service account presents to the token endpoint (RFC 7523): header `alg` RS256,
/// `typ` JWT, `kid` the key id; claims `iss` the client email, `scope`, `aud` the account's
/// `token_uri`, `iat` and `exp`. Signed with the account's key; the signed text is a credential.
struct GoogleAssertion {
    private struct Header: Encodable {
        let alg = "RS256"
        let kid: String
        let typ = "JWT"
    }

    private struct Claims: Encodable {
        let iss: String
        let scope: String
        let aud: String
        let iat: Int64
        let exp: Int64
    }

    let account: GoogleServiceAccount
    let scope: String
    /// `iat`, in whole seconds since the epoch.
    let issuedAt: Int64
    /// `exp - iat` in seconds.
    let lifetime: Int64

    /// An assertion issued at `issuedAt` (rounded down to the second), valid for `lifetime` seconds.
    init(account: GoogleServiceAccount, scope: String, issuedAt: Date, lifetime: Int64) {
        self.account = account
        self.scope = scope
        self.issuedAt = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        self.lifetime = lifetime
    }

    /// The compact JWS. Throws `.configuration` when the key cannot sign.
    func signed() throws(GooglePlayAPIError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let header = try encoder.encode(Header(kid: account.privateKeyID))
            let claims = try encoder.encode(
                Claims(
                    iss: account.clientEmail, scope: scope, aud: account.tokenURI.absoluteString, iat: issuedAt,
                    exp: issuedAt + lifetime))
            return try CompactJWS.sign(
                header: Array(header), payload: Array(claims), key: account.privateKey, algorithm: .rs256)
        } catch {
            throw GooglePlayAPIError(.configuration, "cannot sign an assertion for \(account)")
        }
    }
}
