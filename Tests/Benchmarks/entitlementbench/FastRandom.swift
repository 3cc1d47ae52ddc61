/// SplitMix64: a fast, seedable generator for the benchmark's made-up identifiers (millions of
/// tokens and UUIDs; the system generator would make a syscall for each draw). Not for secrets.
struct FastRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// Seeded from the system generator.
    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A random version-4 UUID in its lowercase text form, like the account ids apps use.
    mutating func uuidString() -> String {
        let high = next()
        let low = next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * index))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (8 * index))
        }
        bytes[6] = (bytes[6] & 0x0f) | 0x40
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `count` characters drawn from `alphabet` (at most 64 symbols), six bits per character.
    mutating func text(count: Int, from alphabet: [UInt8]) -> String {
        precondition(alphabet.count <= 64 && !alphabet.isEmpty)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        var bits = next()
        var left = 10
        while bytes.count < count {
            if left == 0 {
                bits = next()
                left = 10
            }
            bytes.append(alphabet[Int(bits & 63) % alphabet.count])
            bits >>= 6
            left -= 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
