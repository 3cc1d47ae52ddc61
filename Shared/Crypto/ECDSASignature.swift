import COpenSSL

/// Conversions between the two encodings of an ECDSA signature: the fixed-width R||S pair JWS
/// uses (RFC 7518 §3.4) and the DER `ECDSA-Sig-Value` OpenSSL signs and verifies.
public enum ECDSASignature {
    /// DER for a raw R||S signature of `2 × coordinateBytes` bytes (32 for P-256). Throws when
    /// the length is wrong or R or S is zero (never a valid signature). Built directly: a
    /// SEQUENCE of two INTEGERs, each without leading zeros and with a 0 before a high bit.
    public static func der(fromRaw raw: [UInt8], coordinateBytes: Int) throws(CryptoError) -> [UInt8] {
        guard raw.count == 2 * coordinateBytes else {
            throw CryptoError(message: "an R||S signature must be \(2 * coordinateBytes) bytes, not \(raw.count)")
        }
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
            guard let start = bytes.firstIndex(where: { $0 != 0 }) else { return nil }
            let magnitude = bytes[start...]
            let pad = magnitude.first! & 0x80 != 0
            return [0x02] + length(magnitude.count + (pad ? 1 : 0)) + (pad ? [0] : []) + magnitude
        }
        guard let r = integer(raw[..<coordinateBytes]) else { throw CryptoError(message: "R is zero") }
        guard let s = integer(raw[coordinateBytes...]) else { throw CryptoError(message: "S is zero") }
        return [0x30] + length(r.count + s.count) + r + s
    }

    /// A DER length: one byte below 128, else 0x80 + the count of big-endian length bytes.
    private static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(truncatingIfNeeded: rest), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
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
