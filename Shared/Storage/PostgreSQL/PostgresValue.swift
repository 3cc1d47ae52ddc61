import CLibPQ

/// A statement parameter, sent to the server in PostgreSQL's text format (bytes in binary).
public enum PostgresValue: Sendable, Hashable {
    /// Text; also the way to send any type the server parses from text (numeric, uuid, timestamptz).
    /// PostgreSQL text cannot hold a NUL character; such a value is refused before it is sent.
    case text(String)
    /// An integer, announced as int8 (the server converts it for int2/int4/numeric columns).
    case int(Int64)
    /// Bytes, announced as bytea and sent in binary format as they are.
    case bytes([UInt8])
    /// A boolean, sent as `t` or `f`.
    case bool(Bool)
    /// SQL NULL; the server infers its type from the statement.
    case null

    /// The value in PostgreSQL's text format (bytes as bytea hex, `\x0001ff`), or nil for SQL NULL.
    public var textEncoding: String? {
        switch self {
        case .text(let value): value
        case .int(let value): String(value)
        case .bytes(let value): Self.hexEncoded(value)
        case .bool(let value): value ? "t" : "f"
        case .null: nil
        }
    }

    /// The parameter type announced to the server; 0 lets it infer the type from the statement.
    var typeOID: Oid {
        switch self {
        case .int: 20  // int8
        case .bytes: 17  // bytea
        case .bool: 16  // bool
        case .text, .null: 0
        }
    }

    private static func hexEncoded(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var utf8: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        utf8.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            utf8.append(digits[Int(byte >> 4)])
            utf8.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: utf8, as: UTF8.self)
    }
}
