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
        let dash = UInt8(ascii: "-")
        guard bytes.count == 36, bytes[8] == dash, bytes[13] == dash, bytes[18] == dash, bytes[23] == dash else {
            return nil
        }
        var invalid = false
        func digits(_ range: Range<Int>, into word: inout UInt64) {
            for index in range {
                let byte = bytes[index]
                let decimal = byte &- UInt8(ascii: "0")
                let letter = byte &- UInt8(ascii: "a")
                let value = decimal < 10 ? decimal : letter < 6 ? letter &+ 10 : 0xFF
                invalid = invalid || value == 0xFF
                word = word << 4 | UInt64(value & 0xF)
            }
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        digits(0..<8, into: &high)
        digits(9..<13, into: &high)
        digits(14..<18, into: &high)
        digits(19..<23, into: &low)
        digits(24..<36, into: &low)
        return invalid ? nil : (high, low)
    }
}

/// A subscription key as the view looks it up: a store id of digits (Apple's transaction ids)
/// as a number, anything else (Google's purchase tokens) as its text.
struct StoreKey: Hashable, Sendable {
    enum ID: Hashable, Sendable {
        case number(UInt64)
        case text(String)
    }

    let store: Store
    let environment: StoreEnvironment
    let id: ID

    init(_ key: SubscriptionKey) {
        store = key.store
        environment = key.environment
        let utf8 = key.storeID.utf8
        if (1...19).contains(utf8.count), utf8.first != UInt8(ascii: "0"),
            utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let number = UInt64(key.storeID)
        {
            id = .number(number)
        } else {
            id = .text(key.storeID)
        }
    }

    /// Store, environment and whether the id is a text, as `Holding.keyBits` has them.
    var keyBits: UInt8 {
        var bits =
            UInt8(truncatingIfNeeded: store.rawValue) & 0x3 | (UInt8(truncatingIfNeeded: environment.rawValue) & 0x3)
            << 2
        if case .text = id { bits |= Holding.textID }
        return bits
    }
}

/// Runs `body` on the UTF-8 bytes of `text`, without a copy for a native string.
func withUTF8Bytes<T>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
    if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
    return Array(text.utf8).withUnsafeBufferPointer(body)
}
