/// Percent-encoding (RFC 3986) for the ids and tokens store API clients put in paths and queries.
public enum PercentEncoding {
    /// `text` with every UTF-8 byte but the unreserved characters (ALPHA, DIGIT, `-`, `.`, `_`,
    /// `~`) percent-encoded, so it stays one path segment or one query value whatever it holds.
    public static func unreserved(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// Whether `segment` would change the path it is put in (`.` or `..`), even encoded.
    public static func isDotSegment(_ segment: String) -> Bool { segment == "." || segment == ".." }
}
