import Crypto
import Testing

@Suite("Digest")
struct DigestTests {
    @Test("SHA-256 of known inputs")
    func sha256() {
        #expect(Digest.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Digest.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("a hash state after a prefix gives the SHA-256 of the prefix and what follows, at every split")
    func prefixState() throws {
        let message = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for split in [0, 1, 55, 56, 63, 64, 65, 127, 128, 129, 299, 300] {
            let state = try #require(message[..<split].withUnsafeBytes { Digest.SHA256Prefix($0) })
            #expect(state.count == split)
            let rest = Array(message[split...])
            // Twice from the same state: finishing works on a copy and leaves the state as it was.
            for _ in 0..<2 {
                #expect(rest.withUnsafeBytes { state.finish($0) } == Digest.sha256(message), "split \(split)")
            }
            #expect([UInt8]().withUnsafeBytes { state.finish($0) } == Digest.sha256(Array(message[..<split])))
        }
    }
}
