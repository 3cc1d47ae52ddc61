import COpenSSL

/// Message digests on OpenSSL.
public enum Digest {
    /// The SHA-256 of `bytes` as 64 lowercase hex digits.
    public static func sha256Hex(_ bytes: [UInt8]) -> String { Hex.encode(sha256(bytes)) }

    /// The 32-byte SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, fetchedSHA256, 32) }

    /// SHA-256 fetched from the default provider once: `EVP_sha256()` makes OpenSSL 3 look the
    /// implementation up again on every digest.
    nonisolated(unsafe) static let fetchedSHA256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// The 20-byte SHA-1 of `bytes` (for name-based UUIDs, not for security).
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha1(), 20) }

    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { input in
                // HMAC writes at most EVP_MAX_MD_SIZE bytes into `mac`; the key and input are only read.
                HMAC(
                    EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                    input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, &mac, &length)
            }
        }
        precondition(result != nil && length == 32, "HMAC-SHA256 failed")
        return Array(mac.prefix(32))
    }

    /// Whether `a` and `b` are equal, in time that depends on their length only.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

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
