import Foundation

/// Base64url without padding (RFC 7515 §2), the encoding of JWS segments.
public enum Base64URL {
    /// Encodes `bytes` with the URL-safe alphabet and no `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// Decodes unpadded base64url; nil for any character outside the alphabet (including `=`,
    /// `+`, `/` and whitespace) or an impossible length.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        if let canonical = text.utf8.withContiguousStorageIfAvailable({ decodeCanonical(utf8: $0) }), let canonical {
            return canonical
        }
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                standard.append(byte)
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        if standard.count % 4 == 1 { return nil }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(standard)).map { [UInt8]($0) }
    }

    /// Decodes standard base64 with padding (the encoding of JWS `x5c` entries, RFC 7515 §4.1.6);
    /// nil for anything else.
    public static func decodeStandard(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.count % 4 == 0 else { return nil }
        return Data(base64Encoded: String(text)).map { [UInt8]($0) }
    }

    /// base64url characters → their 6-bit values; 0xFF for every other byte.
    private static let alphabet: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (value, character) in characters.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    /// Decodes unpadded base64url from its UTF-8 bytes with a table, when it is in canonical
    /// form: nil for a character outside the alphabet, a length of 4n+1, or non-zero bits after
    /// the last byte (which `decode` still accepts, as Foundation does). What it decodes,
    /// `decode` decodes to the same bytes.
    public static func decodeCanonical(utf8 text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = text.count
        let blocks = count / 4
        let rest = count % 4
        guard rest != 1 else { return nil }
        let outputCount = blocks * 3 + (rest == 0 ? 0 : rest - 1)
        var valid = true
        let output = alphabet.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputCount) { output, initialized in
                var input = 0
                var written = 0
                for _ in 0..<blocks {
                    let a = table[Int(text[input])]
                    let b = table[Int(text[input + 1])]
                    let c = table[Int(text[input + 2])]
                    let d = table[Int(text[input + 3])]
                    guard (a | b | c | d) & 0x80 == 0 else {
                        valid = false
                        break
                    }
                    let bits = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    output[written] = UInt8(truncatingIfNeeded: bits >> 16)
                    output[written + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                    output[written + 2] = UInt8(truncatingIfNeeded: bits)
                    input += 4
                    written += 3
                }
                if valid && rest > 0 {
                    let a = table[Int(text[input])]
                    let b = table[Int(text[input + 1])]
                    let c = rest == 3 ? table[Int(text[input + 2])] : 0
                    // Bits left over after the last byte must be zero (canonical form).
                    let leftover = rest == 2 ? b & 0x0F : c & 0x03
                    if (a | b | c) & 0x80 != 0 || leftover != 0 {
                        valid = false
                    } else {
                        output[written] = a << 2 | b >> 4
                        if rest == 3 { output[written + 1] = (b & 0x0F) << 4 | c >> 2 }
                    }
                }
                // UInt8 needs no deinitialization: an abandoned buffer may claim none.
                initialized = valid ? outputCount : 0
            }
        }
        return valid ? output : nil
    }
}
