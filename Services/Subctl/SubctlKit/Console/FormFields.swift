import HTTPClient

/// The fields of a form as a browser posts it (`application/x-www-form-urlencoded`), and the
/// percent-encoding the console's links put data in.
public struct FormFields: Sendable, Equatable {
    /// The fields in the order posted; a name posted twice keeps both.
    public var pairs: [(name: String, value: String)]

    public init(_ pairs: [(name: String, value: String)] = []) { self.pairs = pairs }

    /// The fields of a posted body: `name=value` pairs joined by `&`, `+` for a space, `%XX` for a
    /// byte; a malformed escape is kept as it is, and bytes that are not UTF-8 are replaced.
    public init(body: [UInt8]) {
        pairs = body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.decode(parts[0]), parts.count > 1 ? Self.decode(parts[1]) : "")
        }
    }

    /// The last value posted under `name`.
    public subscript(name: String) -> String? { pairs.last { $0.name == name }?.value }

    /// The body a browser would post for these fields.
    public var encoded: String {
        pairs.map { Self.percentEncoded($0.name) + "=" + Self.percentEncoded($0.value) }.joined(separator: "&")
    }

    public static func == (lhs: FormFields, rhs: FormFields) -> Bool {
        lhs.pairs.map(\.name) == rhs.pairs.map(\.name) && lhs.pairs.map(\.value) == rhs.pairs.map(\.value)
    }

    /// `text` with every byte but ASCII letters, digits and `-._~` as `%XX`: safe as a path
    /// segment or a query value.
    public static func percentEncoded(_ text: String) -> String { PercentEncoding.unreserved(text) }

    /// `path?name=value&…` with each value percent-encoded; the pairs whose value is nil are left out.
    public static func link(_ path: String, _ query: KeyValuePairs<String, String?>) -> String {
        let parts = query.compactMap { name, value in value.map { "\(name)=\(percentEncoded($0))" } }
        return parts.isEmpty ? path : path + "?" + parts.joined(separator: "&")
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
