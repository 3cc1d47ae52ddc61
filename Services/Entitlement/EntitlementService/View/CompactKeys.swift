public import Model

/// An account id as the view stores it: a canonical lowercase UUID in 16 bytes, anything else
/// as its text. Two ids are the same account only when their texts are equal.
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

    var text: String {
        switch self {
        case .text(let text): return text
        case .uuid(let high, let low):
            let digits = Array("0123456789abcdef".utf8)
            var bytes = [UInt8]()
            bytes.reserveCapacity(36)
            for (index, nibble) in (0..<32).enumerated() {
                if [8, 12, 16, 20].contains(index) { bytes.append(UInt8(ascii: "-")) }
                let word = nibble < 16 ? high : low
                let shift = UInt64(60 - (nibble % 16) * 4)
                bytes.append(digits[Int((word >> shift) & 0xF)])
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The two halves of `id` when it is exactly a lowercase 8-4-4-4-12 hex UUID.
    static func lowercaseUUID(_ id: String) -> (UInt64, UInt64)? {
        var utf8 = id.utf8
        guard utf8.count == 36 else { return nil }
        return utf8.withContiguousStorageIfAvailable { bytes -> (UInt64, UInt64)? in
            var high: UInt64 = 0
            var low: UInt64 = 0
            var nibbles = 0
            for (index, byte) in bytes.enumerated() {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
                default: return nil
                }
                if nibbles < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
                nibbles += 1
            }
            return (high, low)
        } ?? nil
    }
}

/// A subscription key as the view stores it: a store id of digits (Apple's transaction ids)
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

    /// A 64-bit FNV-1a hash of the key, the same in every process (Swift's `Hasher` is seeded
    /// per process).
    var stableHash: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        mix(UInt8(truncatingIfNeeded: store.rawValue))
        mix(UInt8(truncatingIfNeeded: environment.rawValue))
        switch id {
        case .number(let number):
            mix(0)
            for shift in stride(from: 0, to: 64, by: 8) { mix(UInt8(truncatingIfNeeded: number >> UInt64(shift))) }
        case .text(let text):
            mix(1)
            for byte in text.utf8 { mix(byte) }
        }
        return hash
    }

    var subscriptionKey: SubscriptionKey {
        switch id {
        case .number(let number): SubscriptionKey(store: store, environment: environment, storeID: String(number))
        case .text(let text): SubscriptionKey(store: store, environment: environment, storeID: text)
        }
    }
}
