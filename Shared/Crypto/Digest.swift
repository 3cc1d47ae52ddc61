import COpenSSL

/// Message digests on OpenSSL.
public enum Digest {
    /// The SHA-256 of `bytes` as 64 lowercase hex digits.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in sha256(bytes) {
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The 32-byte SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha256(), 32) }

    /// The 20-byte SHA-1 of `bytes` (for name-based UUIDs, not for security).
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha1(), 20) }

    private static func digest(_ bytes: [UInt8], _ algorithm: OpaquePointer?, _ size: Int) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, algorithm, nil)
        }
        precondition(ok == 1 && Int(length) == size, "EVP_Digest failed")
        return Array(digest.prefix(size))
    }
}
