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
}
