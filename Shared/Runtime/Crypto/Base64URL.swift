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

    /// The alphabet's 6-bit values already shifted to their place in a block of four
    /// characters (18, 12, 6 and 0 bits up), place after place (256 entries each), and
    /// 0x8000_0000 for every byte outside it: a block is the OR of four lookups, and the OR has
    /// its top bit set when any character was invalid.
    private static let placed: [UInt32] = (0..<4).flatMap { place in
        alphabet.map { $0 == 0xFF ? 0x8000_0000 : UInt32($0) << (18 - 6 * place) }
    }

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
        guard let input = text.baseAddress, outputCount > 0 else { return count == 0 ? [] : nil }
        var valid = true
        // One byte more than the output: each block stores four bytes, the last one of which the
        // next block overwrites (or nothing reads).
        let output = placed.withUnsafeBufferPointer { table in
            // The value of character `byte` at `place` (0–3) of its block.
            func at(_ place: Int, _ byte: UInt8) -> UInt32 { table[place << 8 | Int(byte)] }
            return [UInt8](unsafeUninitializedCapacity: outputCount + 1) { buffer, initialized in
                let out = UnsafeMutableRawPointer(buffer.baseAddress!)
                var bad: UInt32 = 0
                var written = 0
                var start = 0
                for _ in 0..<blocks {
                    let bits =
                        at(0, input[start]) | at(1, input[start + 1]) | at(2, input[start + 2])
                        | at(3, input[start + 3])
                    bad |= bits
                    out.storeBytes(of: (bits << 8).bigEndian, toByteOffset: written, as: UInt32.self)
                    start += 4
                    written += 3
                }
                if rest > 0 {
                    var bits = at(0, input[start]) | at(1, input[start + 1])
                    if rest == 3 { bits |= at(2, input[start + 2]) }
                    // Bits left over after the last byte must be zero (canonical form).
                    let leftover: UInt32 = rest == 2 ? 0xF000 : 0x00C0
                    if bits & leftover != 0 { bad |= 0x8000_0000 }
                    bad |= bits
                    out.storeBytes(of: UInt8(truncatingIfNeeded: bits >> 16), toByteOffset: written, as: UInt8.self)
                    if rest == 3 {
                        out.storeBytes(
                            of: UInt8(truncatingIfNeeded: bits >> 8), toByteOffset: written + 1, as: UInt8.self)
                    }
                }
                valid = bad & 0x8000_0000 == 0
                // UInt8 needs no deinitialization: an abandoned buffer may claim none.
                initialized = valid ? outputCount : 0
            }
        }
        return valid ? output : nil
    }
}
