import Foundation

/// Reads the common shape of a request body straight from its bytes: a JSON object whose
/// values are strings, `true`, `false`, `null`, and objects and arrays of those. It gives the
/// values JSONSerialization gives for them (`String`, `NSNumber` booleans, `NSNull`,
/// `[String: Any]`, `[Any]`), without going through `Data` and Foundation's parser.
///
/// It answers nil for anything else (a number, a repeated key, an escape it does not know,
/// bytes that are not UTF-8, text after the object, invalid JSON): the caller then reads the body
/// with JSONSerialization, whose answer (and error message) counts.
struct JSONObjectReader {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    private init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The object `json` holds, or nil when it is not of the shape read here.
    static func object(_ json: [UInt8]) -> [String: Any]? {
        json.withUnsafeBytes { bytes in
            var reader = JSONObjectReader(bytes)
            reader.skipSpace()
            guard reader.peek() == UInt8(ascii: "{"), let object = reader.object() else { return nil }
            reader.skipSpace()
            return reader.index == bytes.count ? object : nil
        }
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value() -> Any? {
        skipSpace()
        switch peek() {
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "t"): return literal("true") ? NSNumber(value: true) : nil
        case UInt8(ascii: "f"): return literal("false") ? NSNumber(value: false) : nil
        case UInt8(ascii: "n"): return literal("null") ? NSNull() : nil
        default: return nil
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
        index += count
        return true
    }

    private mutating func object() -> [String: Any]? {
        index += 1  // {
        var object: [String: Any] = [:]
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return object
        }
        while true {
            skipSpace()
            guard peek() == UInt8(ascii: "\""), let key = string() else { return nil }
            skipSpace()
            guard peek() == UInt8(ascii: ":") else { return nil }
            index += 1
            guard let value = value(), object.updateValue(value, forKey: key) == nil else { return nil }
            skipSpace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return object
            default: return nil
            }
        }
    }

    private mutating func array() -> [Any]? {
        index += 1  // [
        var array: [Any] = []
        skipSpace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            return array
        }
        while true {
            guard let value = value() else { return nil }
            array.append(value)
            skipSpace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return array
            default: return nil
            }
        }
    }

    /// A string without escapes other than `\"`, `\\`, `\/`, `\n`, `\t`, `\r`, `\b`, `\f`; nil
    /// for a `\u` escape, a control character or bytes that are not UTF-8.
    private mutating func string() -> String? {
        index += 1  // "
        let start = index
        var unescaped: [UInt8]?
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let text =
                    unescaped.map { String(validating: $0, as: UTF8.self) }
                    ?? String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            case UInt8(ascii: "\\"):
                guard index + 1 < bytes.count else { return nil }
                let replacement: UInt8
                switch bytes[index + 1] {
                case UInt8(ascii: "\""): replacement = UInt8(ascii: "\"")
                case UInt8(ascii: "\\"): replacement = UInt8(ascii: "\\")
                case UInt8(ascii: "/"): replacement = UInt8(ascii: "/")
                case UInt8(ascii: "n"): replacement = 0x0A
                case UInt8(ascii: "t"): replacement = 0x09
                case UInt8(ascii: "r"): replacement = 0x0D
                case UInt8(ascii: "b"): replacement = 0x08
                case UInt8(ascii: "f"): replacement = 0x0C
                default: return nil
                }
                if unescaped == nil { unescaped = Array(bytes[start..<index]) }
                unescaped!.append(replacement)
                index += 2
            case 0..<0x20:
                return nil
            default:
                unescaped?.append(byte)
                index += 1
            }
        }
        return nil
    }
}
