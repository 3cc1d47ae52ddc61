import Crypto
public import Foundation

/// The `appAccountToken` an app account is expected to buy with. Apps set it when they start a
/// purchase (StoreKit's `appAccountToken` purchase option); the verifier checks it against the
/// account presenting the purchase.
///
/// An account id that is itself a UUID is its own token. Any other id maps to the name-based
/// UUID (RFC 9562 version 5, SHA-1) of the id in the configured namespace, which the app
/// computes the same way.
public enum AccountToken {
    /// The token for `accountID` (lowercase UUID text).
    public static func expected(for accountID: String, namespace: UUID) -> String {
        if let uuid = UUID(uuidString: accountID) { return uuid.uuidString.lowercased() }
        var namespaceBytes = withUnsafeBytes(of: namespace.uuid) { Array($0) }
        namespaceBytes += Array(accountID.utf8)
        var hash = Digest.sha1(namespaceBytes)
        hash[6] = (hash[6] & 0x0F) | 0x50
        hash[8] = (hash[8] & 0x3F) | 0x80
        let uuid = UUID(
            uuid: (
                hash[0], hash[1], hash[2], hash[3], hash[4], hash[5], hash[6], hash[7], hash[8], hash[9], hash[10],
                hash[11], hash[12], hash[13], hash[14], hash[15]
            ))
        return uuid.uuidString.lowercased()
    }

    /// Whether `token` (as the store reported it) is the one `accountID` buys with.
    public static func matches(_ token: String, accountID: String, namespace: UUID) -> Bool {
        guard let reported = UUID(uuidString: token) else { return false }
        return reported.uuidString.lowercased() == expected(for: accountID, namespace: namespace)
    }
}
