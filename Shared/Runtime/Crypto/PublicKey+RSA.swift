import COpenSSL
import CShims

extension PublicKey {
    /// The smallest RSA modulus `init(rsaModulus:exponent:)` accepts, in bits.
    public static let minimumRSAModulusBits = 2048
    /// The largest RSA modulus accepted, in bits (bounds the cost of one verification).
    public static let maximumRSAModulusBits = 8192

    /// An RSA public key from its modulus and public exponent as big-endian unsigned integers
    /// (the decoded JWK `n` and `e`, RFC 7518 §6.3.1). Leading zero bytes are ignored.
    ///
    /// Throws `CryptoError` for a modulus under `minimumRSAModulusBits` or over
    /// `maximumRSAModulusBits`, or an even modulus; for an exponent that is even, below 3 or
    /// longer than 64 bits; and when OpenSSL cannot build the key.
    public convenience init(rsaModulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        let modulus = Array(rsaModulus.drop { $0 == 0 })
        let exponent = Array(exponent.drop { $0 == 0 })
        let bits = modulus.first.map { (modulus.count - 1) * 8 + (8 - $0.leadingZeroBitCount) } ?? 0
        guard bits >= Self.minimumRSAModulusBits else {
            throw CryptoError(
                message: "the RSA modulus has \(bits) bits, fewer than the \(Self.minimumRSAModulusBits) required")
        }
        guard bits <= Self.maximumRSAModulusBits else {
            throw CryptoError(
                message: "the RSA modulus has \(bits) bits, more than the \(Self.maximumRSAModulusBits) accepted")
        }
        guard modulus.last! & 1 == 1 else { throw CryptoError(message: "the RSA modulus is even") }
        guard let low = exponent.last, low & 1 == 1, exponent.count <= 8, exponent.count > 1 || low >= 3 else {
            throw CryptoError(message: "the RSA public exponent must be odd, at least 3 and at most 64 bits")
        }
        ERR_clear_error()
        // The BIGNUMs, the builder and the parameter array are ours; EVP_PKEY_fromdata copies them.
        guard let n = BN_bin2bn(modulus, Int32(modulus.count), nil) else { throw .openSSL("BN_bin2bn (n) failed") }
        defer { BN_free(n) }
        guard let e = BN_bin2bn(exponent, Int32(exponent.count), nil) else { throw .openSSL("BN_bin2bn (e) failed") }
        defer { BN_free(e) }
        guard let builder = OSSL_PARAM_BLD_new() else { throw .openSSL("OSSL_PARAM_BLD_new failed") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps the name pointers until OSSL_PARAM_BLD_to_param: static strings only.
        guard OSSL_PARAM_BLD_push_BN(builder, Self.cString("n"), n) == 1,
            OSSL_PARAM_BLD_push_BN(builder, Self.cString("e"), e) == 1
        else { throw .openSSL("OSSL_PARAM_BLD_push_BN failed") }
        guard let parameters = OSSL_PARAM_BLD_to_param(builder) else {
            throw .openSSL("OSSL_PARAM_BLD_to_param failed")
        }
        defer { OSSL_PARAM_free(parameters) }
        // The context keeps the key type name pointer: a static string.
        guard let context = EVP_PKEY_CTX_new_from_name(nil, Self.cString("RSA"), nil) else {
            throw .openSSL("EVP_PKEY_CTX_new_from_name(RSA) failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else { throw .openSSL("EVP_PKEY_fromdata_init failed") }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata(context, &key, cshim_evp_pkey_public_key_selection(), parameters) == 1, let key else {
            throw .openSSL("EVP_PKEY_fromdata cannot build an RSA public key")
        }
        self.init(takingOwnership: key)
    }

    /// An RSA public key from a JWK's `n` and `e` members: unpadded base64url (trailing `=` is
    /// tolerated). Throws `CryptoError` when either is not base64url, and for the reasons
    /// `init(rsaModulus:exponent:)` gives.
    public convenience init(jwkModulus: String, jwkExponent: String) throws(CryptoError) {
        guard let modulus = Self.decodeJWKInteger(jwkModulus) else {
            throw CryptoError(message: "the JWK modulus n is not base64url")
        }
        guard let exponent = Self.decodeJWKInteger(jwkExponent) else {
            throw CryptoError(message: "the JWK exponent e is not base64url")
        }
        try self.init(rsaModulus: modulus, exponent: exponent)
    }

    /// The modulus and public exponent of an RSA key as minimal big-endian bytes (what a JWK's
    /// `n` and `e` encode); nil for any other kind of key.
    public var rsaComponents: (modulus: [UInt8], exponent: [UInt8])? {
        withHandle { key -> (modulus: [UInt8], exponent: [UInt8])? in
            guard EVP_PKEY_is_a(key, "RSA") == 1,
                let modulus = Self.bignumParameter(key, "n"),
                let exponent = Self.bignumParameter(key, "e")
            else {
                ERR_clear_error()
                return nil
            }
            return (modulus, exponent)
        }
    }

    /// The big-endian bytes of the integer parameter `name` of `key`, nil when it has none.
    private static func bignumParameter(_ key: OpaquePointer, _ name: UnsafePointer<CChar>) -> [UInt8]? {
        // EVP_PKEY_get_bn_param allocates a new BIGNUM for the caller to free.
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let number else { return nil }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
        let written = BN_bn2bin(number, &bytes)
        return Array(bytes.prefix(Int(written)))
    }

    /// A NUL-terminated C string in static storage, valid for the life of the process (unlike
    /// the temporary a Swift `String` argument becomes), for OpenSSL calls that keep the pointer.
    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    private static func decodeJWKInteger(_ text: String) -> [UInt8]? {
        var text = Substring(text)
        for _ in 0..<2 where text.last == "=" { text.removeLast() }
        guard let bytes = Base64URL.decode(text), !bytes.isEmpty else { return nil }
        return bytes
    }
}
