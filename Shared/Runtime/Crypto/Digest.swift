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

    /// The SHA-256 state after a fixed prefix: messages that start with the same bytes (JWS
    /// signing inputs with one header) hash only what follows it. Immutable after creation;
    /// each `finish` works on a copy, so concurrent calls are safe.
    // @unchecked: the EVP_MD_CTX is never updated after init, only copied.
    public final class SHA256Prefix: @unchecked Sendable {
        private let context: OpaquePointer
        /// How many bytes the prefix had.
        public let count: Int

        /// The state after hashing `prefix`; nil when OpenSSL cannot make one.
        public init?(_ prefix: UnsafeRawBufferPointer) {
            guard let context = EVP_MD_CTX_new() else { return nil }
            guard EVP_DigestInit_ex(context, fetchedSHA256, nil) == 1,
                EVP_DigestUpdate(context, prefix.baseAddress, prefix.count) == 1
            else {
                EVP_MD_CTX_free(context)
                return nil
            }
            self.context = context
            count = prefix.count
        }

        deinit { EVP_MD_CTX_free(context) }

        /// The 32-byte SHA-256 of the prefix followed by `rest`; nil when OpenSSL fails.
        public func finish(_ rest: UnsafeRawBufferPointer) -> [UInt8]? {
            guard let copy = EVP_MD_CTX_new() else { return nil }
            defer { EVP_MD_CTX_free(copy) }
            var length: UInt32 = 0
            let digest = [UInt8](unsafeUninitializedCapacity: 32) { output, initialized in
                guard EVP_MD_CTX_copy_ex(copy, context) == 1, EVP_DigestUpdate(copy, rest.baseAddress, rest.count) == 1,
                    EVP_DigestFinal_ex(copy, output.baseAddress, &length) == 1, length == 32
                else {
                    initialized = 0
                    return
                }
                initialized = 32
            }
            return digest.count == 32 ? digest : nil
        }
    }

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
