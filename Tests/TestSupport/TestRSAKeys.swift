public import Crypto
import Synchronization

/// RSA-2048 keys for tests, generated once per test process and shared: generating one takes
/// long enough that dozens of tests each making their own would hold up every other test.
/// Tests that need keys that differ take different indices.
public enum TestRSAKeys {
    private static let keys = Mutex<[Int: PrivateKey]>([:])

    /// The key number `index` (0…7), generated on first use.
    public static func key(_ index: Int = 0) throws(CryptoError) -> PrivateKey {
        precondition((0..<8).contains(index), "TestRSAKeys has keys 0…7")
        if let key = keys.withLock({ $0[index] }) { return key }
        let fresh = try PrivateKey.generate(.rsa2048)
        return keys.withLock { keys in
            if let key = keys[index] { return key }
            keys[index] = fresh
            return fresh
        }
    }
}
