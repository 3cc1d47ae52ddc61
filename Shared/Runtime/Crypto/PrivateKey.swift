import COpenSSL

/// A private key (OpenSSL `EVP_PKEY*`): generated here or read from PEM, used to sign
/// certificates and to configure TLS.
///
/// The key is never changed after creation.
// @unchecked: the EVP_PKEY is immutable after init, and OpenSSL allows concurrent read-only use.
public final class PrivateKey: @unchecked Sendable {
    /// The key types this module generates.
    public enum Kind: Sendable, Hashable {
        /// ECDSA on NIST P-256 (prime256v1).
        case p256
        /// ECDSA on NIST P-384 (secp384r1).
        case p384
        /// RSA with a 2048-bit modulus.
        case rsa2048
    }

    private let handle: OpaquePointer

    /// Adopts an `EVP_PKEY*` reference; the key frees it when it goes away.
    public init(takingOwnership pointer: OpaquePointer) {
        handle = pointer
    }

    deinit { EVP_PKEY_free(handle) }

    /// Generates a fresh key of `kind`. Throws `CryptoError` if OpenSSL fails.
    public static func generate(_ kind: Kind) throws(CryptoError) -> PrivateKey {
        ERR_clear_error()
        guard let context = EVP_PKEY_CTX_new_id(kind == .rsa2048 ? EVP_PKEY_RSA : EVP_PKEY_EC, nil) else {
            throw .openSSL("EVP_PKEY_CTX_new_id failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { throw .openSSL("EVP_PKEY_keygen_init failed") }
        let configured: Int32
        switch kind {
        case .p256: configured = EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1)
        case .p384: configured = EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_secp384r1)
        case .rsa2048: configured = EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048)
        }
        guard configured > 0 else { throw .openSSL("setting key parameters for \(kind) failed") }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(context, &key) == 1, let key else { throw .openSSL("generating a \(kind) key failed") }
        return PrivateKey(takingOwnership: key)
    }

    /// Reads an unencrypted private key from PEM: PKCS#8 or OpenSSL's traditional EC and RSA
    /// formats. Encrypted keys are rejected
    /// (no password prompt). Throws `CryptoError` when no key can be read.
    public convenience init(pem: String) throws(CryptoError) {
        ERR_clear_error()
        let bio = try MemoryBIO(bytes: pem.utf8)
        // The callback refuses to supply a password, so OpenSSL never prompts on a terminal.
        let key = bio.withHandle { PEM_read_bio_PrivateKey($0, nil, { _, _, _, _ in 0 }, nil) }
        guard let key else { throw .openSSL("cannot read a private key from PEM") }
        self.init(takingOwnership: key)
    }

    /// The key as unencrypted PKCS#8 PEM. The result is secret.
    public func pemPKCS8() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        let written = bio.withHandle { bio in
            withHandle { PEM_write_bio_PKCS8PrivateKey(bio, $0, nil, nil, 0, nil, nil) }
        }
        guard written == 1 else { throw .openSSL("PEM_write_bio_PKCS8PrivateKey failed") }
        return bio.readString()
    }

    /// The kind of this key, or nil for any other algorithm, curve or size.
    public var kind: Kind? {
        withHandle { key -> Kind? in
            if EVP_PKEY_is_a(key, "RSA") == 1 {
                return EVP_PKEY_get_bits(key) == 2048 ? .rsa2048 : nil
            }
            guard EVP_PKEY_is_a(key, "EC") == 1 else { return nil }
            var name = [CChar](repeating: 0, count: 64)
            guard EVP_PKEY_get_group_name(key, &name, name.count, nil) == 1 else { return nil }
            switch String(cBuffer: name) {
            case "prime256v1", "P-256": return .p256
            case "secp384r1", "P-384": return .p384
            default: return nil
            }
        }
    }

    /// True for RSA keys (whatever their size).
    var isRSA: Bool { withHandle { EVP_PKEY_is_a($0, "RSA") == 1 } }

    /// Signs `message` with SHA-256: a DER ECDSA signature for EC keys, PKCS #1 v1.5 for RSA.
    /// Throws `CryptoError` when OpenSSL fails.
    public func signSHA256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw .openSSL("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, handle) == 1 else {
            throw .openSSL("EVP_DigestSignInit failed")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw .openSSL("EVP_DigestSign (length) failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw .openSSL("EVP_DigestSign failed")
        }
        return Array(signature.prefix(length))
    }

    /// The public half, as PEM `PUBLIC KEY` (SubjectPublicKeyInfo).
    public func publicKeyPEM() throws(CryptoError) -> String {
        ERR_clear_error()
        let bio = try MemoryBIO()
        guard bio.withHandle({ PEM_write_bio_PUBKEY($0, handle) }) == 1 else {
            throw .openSSL("PEM_write_bio_PUBKEY failed")
        }
        return bio.readString()
    }

    /// Lends the `EVP_PKEY*` for the duration of `body`. Do not free it or keep it; call
    /// `EVP_PKEY_up_ref` first if you must hold on to it.
    public func withUnsafeKey<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(handle) }
    }

    /// `withUnsafeKey` with typed throws, for this module's own use.
    func withHandle<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T {
        defer { withExtendedLifetime(self) {} }
        return try body(handle)
    }
}
