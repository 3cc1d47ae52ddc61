/// A JWS in compact serialization (RFC 7515 §7.1): three base64url segments, decoded but not
/// yet verified. Nothing in it can be trusted until its signature is checked.
public struct CompactJWS: Sendable {
    /// The decoded protected header (JSON bytes).
    public let header: [UInt8]
    /// The decoded payload.
    public let payload: [UInt8]
    /// The decoded signature.
    public let signature: [UInt8]
    /// `BASE64URL(header) "." BASE64URL(payload)`, the bytes the signature covers.
    public let signingInput: [UInt8]

    /// Splits and decodes `text`. Throws when it is not exactly three dot-separated segments of
    /// unpadded base64url, or the header or signature segment is empty.
    public init(_ text: String) throws(CryptoError) {
        let segments = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw CryptoError(message: "a compact JWS has 3 dot-separated segments, this has \(segments.count)")
        }
        let names = ["header", "payload", "signature"]
        var decoded: [[UInt8]] = []
        for (index, segment) in segments.enumerated() {
            guard let bytes = Base64URL.decode(Substring(segment)) else {
                throw CryptoError(message: "the JWS \(names[index]) is not unpadded base64url")
            }
            decoded.append(bytes)
        }
        guard !decoded[0].isEmpty else { throw CryptoError(message: "the JWS header is empty") }
        guard !decoded[2].isEmpty else { throw CryptoError(message: "the JWS signature is empty") }
        header = decoded[0]
        payload = decoded[1]
        signature = decoded[2]
        signingInput = Array(text.utf8[..<segments[1].endIndex])
    }

    /// The JWS algorithms this module signs with.
    public enum Algorithm: String, Sendable {
        /// ECDSA P-256 with SHA-256; signature as 64-byte R||S.
        case es256 = "ES256"
        /// RSASSA-PKCS1-v1_5 with SHA-256.
        case rs256 = "RS256"
    }

    /// Signs `header` and `payload` (JSON bytes) with `key` and returns the compact form. The
    /// header must name `algorithm`; the caller builds it. Throws when OpenSSL cannot sign.
    public static func sign(header: [UInt8], payload: [UInt8], key: PrivateKey, algorithm: Algorithm)
        throws(CryptoError) -> String
    {
        let input = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        var signature = try key.signSHA256(Array(input.utf8))
        if algorithm == .es256 { signature = try ECDSASignature.raw(fromDER: signature, coordinateBytes: 32) }
        return input + "." + Base64URL.encode(signature)
    }
}
