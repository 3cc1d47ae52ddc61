import Foundation

/// A fast reader for the flat JSON objects Apple signs for transactions and renewal info, tried
/// before `JSONDecoder` and decoding exactly what it would decode. It takes only plain input:
/// one object whose members are strings, integers, booleans or null (unknown members may also be
/// objects, arrays and numbers with a fraction); strings of printable ASCII without escapes;
/// integers of at most 18 digits; no exponent; nesting at most 32 deep; each known member at
/// most once. For anything else (an escape, a non-ASCII byte, a fraction in a known member, a
/// type other than the member's, a repeated known member, bad syntax) it returns nil, and
/// `JSONDecoder` decides: it decodes the payload or words the refusal.
enum FlatJSON {
    /// A payload type the reader can fill: made empty, then one member at a time.
    protocol Object {
        init()
        /// The members the type decodes, by JSON name; every other member is skipped.
        static var members: Members<Self> { get }
    }

    /// A type's members, found by the bytes of a name as it stands in the payload (no String is
    /// made of it, nothing is hashed): names are compared by length, then bytes, starting after
    /// the member found last, since a payload lists its members in much the same order.
    struct Members<Root>: Sendable {
        private let names: [[UInt8]]
        private let entries: [Member<Root>]

        fileprivate init(_ list: [(String, Member<Root>.Value)]) {
            names = list.map { Array($0.0.utf8) }
            entries = list.enumerated().map { Member(bit: $0.offset, value: $0.element.1) }
        }

        /// The members' JSON names.
        var keys: [String] { names.map { String(decoding: $0, as: UTF8.self) } }

        /// The position of the member named `name`, looking from `hint` on (and around).
        fileprivate func position(of name: UnsafeBufferPointer<UInt8>, from hint: Int) -> Int? {
            let count = names.count
            guard count > 0 else { return nil }
            var index = hint < count ? hint : 0
            for _ in 0..<count {
                if names[index].withUnsafeBytes({ $0.hasSameBytes(as: UnsafeRawBufferPointer(name)) }) { return index }
                index = index + 1 == count ? 0 : index + 1
            }
            return nil
        }

        fileprivate subscript(position: Int) -> Member<Root> { entries[position] }
    }

    /// How one member is stored, and its bit in the set of members seen.
    struct Member<Root>: Sendable {
        enum Value: Sendable {
            case string(@Sendable (inout Root, String) -> Void)
            case integer(@Sendable (inout Root, Int64) -> Void)
            case bool(@Sendable (inout Root, Bool) -> Void)
            case strings(@Sendable (inout Root, [String]) -> Void)
        }
        let bit: Int
        let value: Value
    }

    /// A member table from (name, value) pairs, each given its own bit (at most 64 members,
    /// each name once and not empty).
    static func members<Root>(_ list: [(String, Member<Root>.Value)]) -> Members<Root> {
        precondition(list.count <= 64, "at most 64 members")
        precondition(Set(list.map(\.0)).count == list.count && !list.contains { $0.0.isEmpty }, "names once each")
        return Members(list)
    }

    /// `T` read from `bytes`, or nil when the bytes are not plain enough to be sure (see above).
    static func decode<T: Object>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = Reader(bytes: buffer)
            return reader.object(T.self)
        }
    }

    /// A cursor over the bytes; each method consumes what it reads or returns nil/false.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        static let maximumDepth = 32

        mutating func object<T: Object>(_ type: T.Type) -> T? {
            skipSpace()
            guard take(UInt8(ascii: "{")) else { return nil }
            var value = T()
            var seen: UInt64 = 0
            let members = T.members
            var next = 0
            skipSpace()
            if !take(UInt8(ascii: "}")) {
                while true {
                    skipSpace()
                    guard let name = plainStringRange() else { return nil }
                    skipSpace()
                    guard take(UInt8(ascii: ":")) else { return nil }
                    skipSpace()
                    if let position = members.position(of: UnsafeBufferPointer(rebasing: bytes[name]), from: next) {
                        next = position + 1
                        let member = members[position]
                        guard seen & (1 << UInt64(member.bit)) == 0 else { return nil }
                        seen |= 1 << UInt64(member.bit)
                        guard read(member.value, into: &value) else { return nil }
                    } else {
                        guard skipValue(depth: 1) else { return nil }
                    }
                    skipSpace()
                    if take(UInt8(ascii: ",")) { continue }
                    guard take(UInt8(ascii: "}")) else { return nil }
                    break
                }
            }
            skipSpace()
            return index == bytes.count ? value : nil
        }

        /// A known member's value; `null` leaves it nil, as `decodeIfPresent` does.
        private mutating func read<Root>(_ member: Member<Root>.Value, into value: inout Root) -> Bool {
            if literal("null") { return true }
            switch member {
            case .string(let store):
                guard let text = plainString() else { return false }
                store(&value, text)
            case .integer(let store):
                guard let number = integer() else { return false }
                store(&value, number)
            case .bool(let store):
                if literal("true") {
                    store(&value, true)
                } else if literal("false") {
                    store(&value, false)
                } else {
                    return false
                }
            case .strings(let store):
                guard take(UInt8(ascii: "[")) else { return false }
                var list: [String] = []
                skipSpace()
                if !take(UInt8(ascii: "]")) {
                    while true {
                        skipSpace()
                        guard let text = plainString() else { return false }
                        list.append(text)
                        skipSpace()
                        if take(UInt8(ascii: ",")) { continue }
                        guard take(UInt8(ascii: "]")) else { return false }
                        break
                    }
                }
                store(&value, list)
            }
            return true
        }

        /// Skips any value made of the plain parts this reader takes.
        private mutating func skipValue(depth: Int) -> Bool {
            guard index < bytes.count, depth <= Self.maximumDepth else { return false }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return skipPlainString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = bytes[index] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                let isObject = close == UInt8(ascii: "}")
                index += 1
                skipSpace()
                if take(close) { return true }
                while true {
                    skipSpace()
                    if isObject {
                        guard skipPlainString() else { return false }
                        skipSpace()
                        guard take(UInt8(ascii: ":")) else { return false }
                        skipSpace()
                    }
                    guard skipValue(depth: depth + 1) else { return false }
                    skipSpace()
                    if take(UInt8(ascii: ",")) { continue }
                    return take(close)
                }
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return skipNumber()
            }
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, at most 32 characters; no exponent.
        private mutating func skipNumber() -> Bool {
            let start = index
            _ = take(UInt8(ascii: "-"))
            guard digits(leadingZeroAlone: true) > 0 else { return false }
            if take(UInt8(ascii: ".")) { guard digits(leadingZeroAlone: false) > 0 else { return false } }
            // An exponent is JSONDecoder's to judge.
            guard index >= bytes.count || (bytes[index] != UInt8(ascii: "e") && bytes[index] != UInt8(ascii: "E"))
            else { return false }
            return index - start <= 32
        }

        /// Consumes digits and returns how many; with `leadingZeroAlone`, a leading 0 ends them
        /// (and a digit after it fails the number later).
        private mutating func digits(leadingZeroAlone: Bool) -> Int {
            if leadingZeroAlone && index < bytes.count && bytes[index] == UInt8(ascii: "0") {
                index += 1
                return isDigit(index) ? 0 : 1
            }
            let start = index
            while isDigit(index) { index += 1 }
            return index - start
        }

        /// An integer without fraction or exponent, at most 18 digits (so it fits Int64).
        private mutating func integer() -> Int64? {
            let negative = take(UInt8(ascii: "-"))
            let start = index
            guard digits(leadingZeroAlone: true) > 0, index - start <= 18 else { return nil }
            // A fraction or exponent is JSONDecoder's to judge.
            guard
                index >= bytes.count
                    || ![UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index])
            else { return nil }
            var value: Int64 = 0
            for offset in start..<index { value = value * 10 + Int64(bytes[offset] - UInt8(ascii: "0")) }
            return negative ? -value : value
        }

        /// A string of printable ASCII without escapes, or nil.
        private mutating func plainString() -> String? {
            guard let range = plainStringRange() else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }

        /// What `plainString` takes, without making a String of it (a skipped member's).
        private mutating func skipPlainString() -> Bool { plainStringRange() != nil }

        /// The contents of a string of printable ASCII without escapes, consumed with its quotes.
        /// The closing quote is found first (`memchr`), then every byte before it is checked in
        /// one pass without early exit (a backslash before that quote fails the string too).
        private mutating func plainStringRange() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")), index < bytes.count, let base = bytes.baseAddress,
                let found = memchr(base + index, Int32(UInt8(ascii: "\"")), bytes.count - index)
            else { return nil }
            let start = index
            let end = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            var outside: UInt8 = 0
            for offset in start..<end {
                let byte = base[offset]
                // Below 0x20 wraps above 0x5E, as does 0x7F and up.
                outside |= (byte &- 0x20 > 0x5E ? 1 : 0) | (byte == UInt8(ascii: "\\") ? 1 : 0)
            }
            guard outside == 0 else { return nil }
            index = end + 1
            return start..<end
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            // "true" must not run on into letters or digits ("truex"): the next byte is checked
            // by whoever reads on, which accepts only space, ",", "}", "]" or the end.
            index += count
            return true
        }

        private func isDigit(_ position: Int) -> Bool {
            position < bytes.count && bytes[position] >= UInt8(ascii: "0") && bytes[position] <= UInt8(ascii: "9")
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }
    }
}
