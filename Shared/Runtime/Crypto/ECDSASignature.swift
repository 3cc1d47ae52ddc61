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
        // Each INTEGER's magnitude (leading zeros dropped) and whether it needs a 0 before it.
        func magnitude(_ bytes: ArraySlice<UInt8>) -> (ArraySlice<UInt8>, pad: Bool)? {
            guard let start = bytes.firstIndex(where: { $0 != 0 }) else { return nil }
            return (bytes[start...], bytes[start] & 0x80 != 0)
        }
        guard let r = magnitude(raw[..<coordinateBytes]) else { throw CryptoError(message: "R is zero") }
        guard let s = magnitude(raw[coordinateBytes...]) else { throw CryptoError(message: "S is zero") }
        let rLength = r.0.count + (r.pad ? 1 : 0)
        let sLength = s.0.count + (s.pad ? 1 : 0)
        let body = (1 + lengthBytes(rLength) + rLength) + (1 + lengthBytes(sLength) + sLength)
        var der: [UInt8] = []
        der.reserveCapacity(1 + lengthBytes(body) + body)
        der.append(0x30)
        appendLength(body, to: &der)
        func appendInteger(_ magnitude: ArraySlice<UInt8>, pad: Bool, count: Int) {
            der.append(0x02)
            appendLength(count, to: &der)
            if pad { der.append(0) }
            der.append(contentsOf: magnitude)
        }
        appendInteger(r.0, pad: r.pad, count: rLength)
        appendInteger(s.0, pad: s.pad, count: sLength)
        return der
    }

    /// How many bytes the DER length `count` takes.
    private static func lengthBytes(_ count: Int) -> Int {
        guard count >= 0x80 else { return 1 }
        return 1 + (Int.bitWidth - count.leadingZeroBitCount + 7) / 8
    }

    /// A DER length: one byte below 128, else 0x80 + the count of big-endian length bytes.
    private static func appendLength(_ count: Int, to der: inout [UInt8]) {
        guard count >= 0x80 else {
            der.append(UInt8(count))
            return
        }
        let size = lengthBytes(count) - 1
        der.append(0x80 | UInt8(size))
        for index in (0..<size).reversed() { der.append(UInt8(truncatingIfNeeded: count >> (8 * index))) }
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
