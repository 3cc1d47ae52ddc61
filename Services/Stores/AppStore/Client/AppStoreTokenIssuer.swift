import Crypto
import Foundation
import HTTPClient
import Synchronization

/// Signs the bearer JWT the App Store Server API asks for (ES256 with the App Store Connect
/// key) and hands out the same token until shortly before it expires. Safe from any thread.
///
/// The token is a credential: nothing here logs it or puts it in an error.
final class AppStoreTokenIssuer: Sendable {
    /// How long a token is valid (`exp - iat`); Apple accepts at most 60 minutes.
    static let lifetime: TimeInterval = 20 * 60
    /// A cached token is replaced this long before its `exp`.
    static let renewalMargin: TimeInterval = 60
    /// The `aud` claim Apple requires.
    static let audience = "appstoreconnect-v1"

    private struct Header: Encodable {
        let alg = "ES256"
        let kid: String
        let typ = "JWT"
    }

    private struct Claims: Encodable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud: String
        let bid: String
    }

    private struct Cached {
        let token: String
        let expires: Int64
    }

    private let keyID: String
    private let issuerID: String
    private let bundleID: String
    private let key: PrivateKey
    private let now: @Sendable () -> Date
    private let cached = Mutex<Cached?>(nil)

    /// An issuer signing with `key` (P-256) for the given App Store Connect key, issuer and app,
    /// reading the time from `now`.
    init(keyID: String, issuerID: String, bundleID: String, key: PrivateKey, now: @escaping @Sendable () -> Date) {
        self.keyID = keyID
        self.issuerID = issuerID
        self.bundleID = bundleID
        self.key = key
        self.now = now
    }

    /// The current token: the cached one while it has more than `renewalMargin` left, else a
    /// newly signed one. Throws `.configuration` when the key cannot sign.
    func token() throws(AppStoreAPIError) -> String {
        let issuedAt = Int64(now().timeIntervalSince1970.rounded(.down))
        return try cached.withLock { cached throws(AppStoreAPIError) -> String in
            if let current = cached, issuedAt < current.expires - Int64(Self.renewalMargin) {
                return current.token
            }
            let expires = issuedAt + Int64(Self.lifetime)
            let token = try sign(issuedAt: issuedAt, expires: expires)
            cached = Cached(token: token, expires: expires)
            return token
        }
    }

    private func sign(issuedAt: Int64, expires: Int64) throws(AppStoreAPIError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let header = try encoder.encode(Header(kid: keyID))
            let claims = try encoder.encode(
                Claims(iss: issuerID, iat: issuedAt, exp: expires, aud: Self.audience, bid: bundleID))
            return try CompactJWS.sign(header: Array(header), payload: Array(claims), key: key, algorithm: .es256)
        } catch {
            throw AppStoreAPIError(.configuration, "cannot sign the App Store Server API token with key \(keyID)")
        }
    }
}
