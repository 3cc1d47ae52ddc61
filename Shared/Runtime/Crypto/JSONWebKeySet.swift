import Foundation

/// The RSA signing keys of a JSON Web Key Set (RFC 7517 §5), such as Google's
/// https://www.googleapis.com/oauth2/v3/certs:
/// `{"keys":[{"kty":"RSA","kid":…,"n":…,"e":…,"alg":"RS256","use":"sig"},…]}`.
///
/// Reading keeps the keys whose `kty` is `RSA` and whose `use`, when present, is `sig`; other
/// keys are skipped. An RSA key that cannot be used (bad base64url, a modulus under 2048 bits)
/// makes the whole set unreadable rather than silently disappearing.
public struct JSONWebKeySet: Sendable {
    /// One RSA key of the set.
    public struct Key: Sendable {
        /// The key's `kid`, which a JWS header names to select it.
        public let keyID: String?
        /// The `alg` the key is meant for (`RS256` for Google), when the set says.
        public let algorithm: String?
        /// The public key built from `n` and `e`.
        public let publicKey: PublicKey

        /// A key for a set you build yourself (to serve or to write out).
        public init(publicKey: PublicKey, keyID: String?, algorithm: String? = "RS256") {
            self.publicKey = publicKey
            self.keyID = keyID
            self.algorithm = algorithm
        }
    }

    /// The largest key set document read by default, in bytes. Google's holds two or three keys
    /// in about 1.5 KB.
    public static let defaultMaxBytes = 64 * 1024
    /// The most entries of `keys` read by default (of any type).
    public static let defaultMaxKeys = 32

    /// The usable RSA keys, in document order.
    public let keys: [Key]

    /// A set of keys you have (for tests, or to publish your own).
    public init(keys: [Key]) {
        self.keys = keys
    }

    /// Reads a JWKS document. Throws `CryptoError` when it is over `maxBytes`, not a JSON object
    /// with a `keys` array of objects, holds more than `maxKeys` entries, repeats a `kid`, or has
    /// an RSA signing key that cannot be built (see `PublicKey.init(jwkModulus:jwkExponent:)`).
    /// The message never repeats key material.
    public init(
        json: some Collection<UInt8>, maxBytes: Int = Self.defaultMaxBytes, maxKeys: Int = Self.defaultMaxKeys
    ) throws(CryptoError) {
        guard json.count <= maxBytes else {
            throw CryptoError(message: "the key set is \(json.count) bytes, more than the \(maxBytes) accepted")
        }
        guard let document = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw CryptoError(message: "the key set is not a JSON object")
        }
        guard let entries = document["keys"] as? [Any] else {
            throw CryptoError(message: "the key set has no keys array")
        }
        guard entries.count <= maxKeys else {
            throw CryptoError(message: "the key set has \(entries.count) keys, more than the \(maxKeys) accepted")
        }
        var keys: [Key] = []
        var seen: Set<String> = []
        for (index, entry) in entries.enumerated() {
            guard let member = entry as? [String: Any] else {
                throw CryptoError(message: "keys[\(index)] is not a JSON object")
            }
            guard member["kty"] as? String == "RSA" else { continue }
            if let use = member["use"], use as? String != "sig" { continue }
            let keyID = member["kid"] as? String
            guard member["kid"] == nil || keyID != nil else {
                throw CryptoError(message: "keys[\(index)].kid is not a string")
            }
            let algorithm = member["alg"] as? String
            guard member["alg"] == nil || algorithm != nil else {
                throw CryptoError(message: "keys[\(index)].alg is not a string")
            }
            guard let n = member["n"] as? String, let e = member["e"] as? String else {
                throw CryptoError(message: "keys[\(index)] (an RSA key) lacks the string members n and e")
            }
            if let keyID {
                guard seen.insert(keyID).inserted else {
                    throw CryptoError(message: "keys[\(index)] repeats a kid of an earlier key")
                }
            }
            let publicKey: PublicKey
            do {
                publicKey = try PublicKey(jwkModulus: n, jwkExponent: e)
            } catch {
                throw CryptoError(message: "keys[\(index)] cannot be used: \(error.message)")
            }
            keys.append(Key(publicKey: publicKey, keyID: keyID, algorithm: algorithm))
        }
        self.keys = keys
    }

    /// The key whose `kid` is `keyID`, if the set has one.
    public func key(withID keyID: String) -> Key? {
        keys.first { $0.keyID == keyID }
    }

    /// The set as a JWKS document: every RSA key with `kty`, `kid`, `alg`, `use` `sig`, `n` and
    /// `e`, members sorted by name. Keys that are not RSA are left out.
    public func json() -> [UInt8] {
        let members: [[String: String]] = keys.compactMap { key in
            guard let (modulus, exponent) = key.publicKey.rsaComponents else { return nil }
            var member = [
                "kty": "RSA", "use": "sig", "n": Base64URL.encode(modulus), "e": Base64URL.encode(exponent),
            ]
            member["kid"] = key.keyID
            member["alg"] = key.algorithm
            return member
        }
        // Serializing dictionaries of strings cannot fail.
        let data = try! JSONSerialization.data(withJSONObject: ["keys": members], options: [.sortedKeys])
        return [UInt8](data)
    }
}
