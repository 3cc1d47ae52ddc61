import COpenSSL

/// Conversions between the two encodings of an ECDSA signature: the fixed-width R||S pair JWS
/// uses (RFC 7518 §3.4) and the DER `ECDSA-Sig-Value` OpenSSL signs and verifies.
public enum ECDSASignature {
    /// DER for a raw R||S signature of `2 × coordinateBytes` bytes (32 for P-256). Throws when
    /// the length is wrong or R or S is zero (never a valid signature).
    public static func der(fromRaw raw: [UInt8], coordinateBytes: Int) throws(CryptoError) -> [UInt8] {
        guard raw.count == 2 * coordinateBytes else {
            throw CryptoError(message: "an R||S signature must be \(2 * coordinateBytes) bytes, not \(raw.count)")
        }
        guard raw[..<coordinateBytes].contains(where: { $0 != 0 }) else { throw CryptoError(message: "R is zero") }
        guard raw[coordinateBytes...].contains(where: { $0 != 0 }) else { throw CryptoError(message: "S is zero") }
        guard let signature = ECDSA_SIG_new() else { throw .openSSL("ECDSA_SIG_new failed") }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(coordinateBytes), nil) }
        let s = raw.withUnsafeBufferPointer {
            BN_bin2bn($0.baseAddress! + coordinateBytes, Int32(coordinateBytes), nil)
        }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            throw .openSSL("BN_bin2bn failed")
        }
        // On success the signature owns r and s.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw .openSSL("ECDSA_SIG_set0 failed")
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &out)
        guard length > 0, let out else { throw .openSSL("i2d_ECDSA_SIG failed") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The raw R||S form (`2 × coordinateBytes` bytes, each left-padded) of a DER signature.
    public static func raw(fromDER der: [UInt8], coordinateBytes: Int) throws(CryptoError) -> [UInt8] {
        var cursor: UnsafePointer<UInt8>?
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { throw .openSSL("not a DER ECDSA signature") }
        defer { ECDSA_SIG_free(signature) }
        var out = [UInt8](repeating: 0, count: 2 * coordinateBytes)
        // r and s stay owned by the signature.
        guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature),
            out.withUnsafeMutableBufferPointer({ buffer in
                BN_bn2binpad(r, buffer.baseAddress, Int32(coordinateBytes)) == coordinateBytes
                    && BN_bn2binpad(s, buffer.baseAddress! + coordinateBytes, Int32(coordinateBytes))
                        == coordinateBytes
            })
        else { throw CryptoError(message: "the signature's R or S does not fit \(coordinateBytes) bytes") }
        return out
    }
}
