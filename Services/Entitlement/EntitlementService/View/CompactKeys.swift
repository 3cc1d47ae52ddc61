import Model

/// An account id as the view looks it up: a canonical lowercase UUID as two 64-bit halves,
/// anything else as its text. Two ids are the same account only when their texts are equal.
enum AccountKey: Hashable, Sendable {
    case uuid(UInt64, UInt64)
    case text(String)

    init(_ id: String) {
        if let (high, low) = Self.lowercaseUUID(id) {
            self = .uuid(high, low)
        } else {
            self = .text(id)
        }
    }

    /// The canonical text of a UUID's halves.
    static func text(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var at = 0
            for nibble in 0..<32 {
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                    buffer[at] = UInt8(ascii: "-")
                    at += 1
                }
                let word = nibble < 16 ? high : low
                let shift = UInt64(60 - (nibble % 16) * 4)
                buffer[at] = digits.utf8Start[Int((word >> shift) & 0xF)]
                at += 1
            }
            return at
        }
    }

    /// The two halves of `id` when it is exactly a lowercase 8-4-4-4-12 hex UUID.
    static func lowercaseUUID(_ id: String) -> (UInt64, UInt64)? {
        withUTF8Bytes(id) { lowercaseUUID($0) }
    }

    /// The two halves of the UTF-8 `bytes` when they are exactly a lowercase 8-4-4-4-12 hex UUID.
    static func lowercaseUUID(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
        guard bytes.count == 36, let base = bytes.baseAddress else { return nil }
        let dash = UInt8(ascii: "-")
        guard base[8] == dash, base[13] == dash, base[18] == dash, base[23] == dash else { return nil }
        let raw = UnsafeRawPointer(base)
        func word(_ offset: Int) -> UInt64 {
            UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        func half(_ offset: Int) -> UInt64 {
            UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }
        // Eight digits at a time: 0-7, 9-12 with 14-17, 19-22 with 24-27, 28-35.
        guard let a = hex8(word(0)), let b = hex8(half(9) | half(14) << 32), let c = hex8(half(19) | half(24) << 32),
            let d = hex8(word(28))
        else { return nil }
        return (UInt64(a) << 32 | UInt64(b), UInt64(c) << 32 | UInt64(d))
    }

    /// The value of eight lowercase hex digits, the first in the lowest byte of `word`; nil when
    /// a byte is not one of 0-9 or a-f. Every byte is tested at once: adding a constant to a byte
    /// below 0x80 sets its top bit exactly when the byte is at or above a bound, and never
    /// carries into the next byte.
    private static func hex8(_ word: UInt64) -> UInt32? {
        let top: UInt64 = 0x8080_8080_8080_8080
        guard word & top == 0 else { return nil }
        let digit = (word &+ 0x5050_5050_5050_5050) & ~(word &+ 0x4646_4646_4646_4646) & top  // 0x30...0x39
        let letter = (word &+ 0x1F1F_1F1F_1F1F_1F1F) & ~(word &+ 0x1919_1919_1919_1919) & top  // 0x61...0x66
        guard digit | letter == top else { return nil }
        // A digit's value is its low nibble; a letter's is its low nibble + 9.
        var x = ((word & 0x0F0F_0F0F_0F0F_0F0F) &+ (letter >> 7) &* 9).byteSwapped
        x = (x >> 4 | x) & 0x00FF_00FF_00FF_00FF
        x = (x >> 8 | x) & 0x0000_FFFF_0000_FFFF
        x = (x >> 16 | x) & 0x0000_0000_FFFF_FFFF
        return UInt32(truncatingIfNeeded: x)
    }
}

/// A subscription key as the view looks it up: a store id of digits (Apple's transaction ids)
/// as a number, anything else (Google's purchase tokens) as its text (UTF-8, valid while the
/// bytes it was made from are).
struct StoreKey {
    let store: Store
    let environment: StoreEnvironment
    /// The id as a number, when it is 1 to 19 digits without a leading 0 that fit 64 bits.
    let number: UInt64?
    let text: UnsafeBufferPointer<UInt8>

    init(_ store: Store, _ environment: StoreEnvironment, _ id: UnsafeBufferPointer<UInt8>) {
        self.store = store
        self.environment = environment
        text = id
        number = Self.number(id)
    }

    private static func number(_ id: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard (1...19).contains(id.count), id[0] != UInt8(ascii: "0") else { return nil }
        var value: UInt64 = 0
        for byte in id {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            // 19 digits may pass 2^64 - 1.
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        return value
    }

    /// Store, environment and whether the id is a text, as `Holding.keyBits` has them.
    var keyBits: UInt8 {
        var bits =
            UInt8(truncatingIfNeeded: store.rawValue) & 0x3 | (UInt8(truncatingIfNeeded: environment.rawValue) & 0x3)
            << 2
        if number == nil { bits |= Holding.textID }
        return bits
    }
}

/// Runs `body` on the UTF-8 bytes of `text`, without a copy for a native string.
func withUTF8Bytes<T>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
    if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
    return Array(text.utf8).withUnsafeBufferPointer(body)
}
