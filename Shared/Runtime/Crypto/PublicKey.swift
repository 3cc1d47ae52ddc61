import COpenSSL
import Synchronization

/// A public key (OpenSSL `EVP_PKEY*`) that verifies signatures: a certificate's key, or one read
/// from PEM. Immutable after creation.
// @unchecked: the EVP_PKEY is never changed after init, and OpenSSL allows concurrent verifies.
public final class PublicKey: @unchecked Sendable {
    /// What kind of key it is, as far as signature algorithms care.
    public enum Algorithm: Sendable, Hashable {
        case ecP256
        case ecP384
        case ecOther
        /// RSA with the modulus size in bits.
        case rsa(bits: Int)
        case other
    }

    private let handle: OpaquePointer
    /// Verification contexts of this key, initialized once and reused (`EVP_PKEY_CTX*`): a new
    /// context costs OpenSSL 3 an algorithm lookup and a copy of the key into its provider, a
    /// fifth of a P-256 verification. One per concurrent verification, at most `keptContexts` kept.
    private let contexts = Mutex<[UInt]>([])  // `EVP_PKEY_CTX*` bit patterns
    private static let keptContexts = 16

    /// Adopts an `EVP_PKEY*` reference; the key frees it when it goes away.
    public init(takingOwnership pointer: OpaquePointer) {
        handle = pointer
    }

    deinit {
        for context in contexts.withLock({ $0 }) { EVP_PKEY_CTX_free(OpaquePointer(bitPattern: context)) }
        EVP_PKEY_free(handle)
    }

    /// The subject public key of `certificate`. Throws when OpenSSL cannot decode it.
    public convenience init(certificate: X509Certificate) throws(CryptoError) {
        // X509_get_pubkey returns a new reference, which this key then owns.
        let key = certificate.withHandle { X509_get_pubkey($0) }
        guard let key else { throw .openSSL("the certificate's public key cannot be decoded") }
        self.init(takingOwnership: key)
    }

    /// Reads a PEM `PUBLIC KEY` (SubjectPublicKeyInfo). Throws when there is none.
    public convenience init(pem: String) throws(CryptoError) {
        ERR_clear_error()
        let bio = try MemoryBIO(bytes: pem.utf8)
        let key = bio.withHandle { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
        guard let key else { throw .openSSL("cannot read a public key from PEM") }
        self.init(takingOwnership: key)
    }

    /// The key's algorithm and size.
    public var algorithm: Algorithm {
        let bits = Int(EVP_PKEY_get_bits(handle))
        switch EVP_PKEY_get_base_id(handle) {
        case EVP_PKEY_EC: return bits == 256 ? .ecP256 : bits == 384 ? .ecP384 : .ecOther
        case EVP_PKEY_RSA: return .rsa(bits: bits)
        default: return .other
        }
    }

    /// Whether `signature` is a valid SHA-256 signature of `message` under this key: DER-encoded
    /// ECDSA for EC keys, PKCS #1 v1.5 for RSA keys. False for any failure, never a throw: a
    /// signature that does not verify and one that cannot be parsed are the same to a caller.
    public func verifySHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        verify(signature: signature, sha256: Digest.sha256(message))
    }

    /// Whether `signature` is a valid signature, as `verifySHA256` takes it, of a message whose
    /// SHA-256 is `digest` (32 bytes).
    public func verify(signature: [UInt8], sha256 digest: [UInt8]) -> Bool {
        guard digest.count == 32 else { return false }
        defer { ERR_clear_error() }
        guard let context = takeContext() else { return false }
        let verified = EVP_PKEY_verify(context, signature, signature.count, digest, digest.count) == 1
        contexts.withLock { kept in
            if kept.count < Self.keptContexts {
                kept.append(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(context))))
            } else {
                EVP_PKEY_CTX_free(context)
            }
        }
        return verified
    }

    /// A kept context, or a new one ready to verify SHA-256 digests (PKCS #1 v1.5 for RSA).
    private func takeContext() -> OpaquePointer? {
        if let kept = contexts.withLock({ $0.popLast() }) { return OpaquePointer(bitPattern: kept) }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, handle, nil) else { return nil }
        guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, Digest.fetchedSHA256) == 1
        else {
            EVP_PKEY_CTX_free(context)
            return nil
        }
        return context
    }

    /// Lends the `EVP_PKEY*` for the duration of `body`.
    func withHandle<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T {
        defer { withExtendedLifetime(self) {} }
        return try body(handle)
    }
}
