import Foundation
public import Wire

/// Converts between proto3 JSON and protobuf bytes for any message of `proto/`, driven by the
/// schema table wiregen generates (`ProtoSchema`) instead of per-message code.
///
/// The JSON mapping is proto3's: fields by proto name or lowerCamelCase JSON name on input,
/// JSON names on output; 64-bit integers as strings (numbers accepted too); enums by name
/// (numbers accepted, unknown numbers printed as numbers); bytes as base64; default values
/// left out of the output (but bools and lists when asked, `Defaults`), in field-number order. The bytes are what protoc-c's code writes for
/// the same message: fields in number order, zero values (without presence) not sent.
public enum ProtoJSON {
    /// The protobuf bytes of the message `messageFullName` (e.g.
    /// `subscriptions.ledger.v1.GetSubscriptionRequest`) that the JSON object `json` describes.
    ///
    /// Throws `invalidArgument` naming the message and field for invalid JSON, an unknown
    /// field, a value of the wrong type, a number out of range or an unknown enum name;
    /// `notFound` when there is no such message.
    public static func encode(json: [UInt8], as messageFullName: String) throws(RPCError) -> [UInt8] {
        // Checked before parsing: JSONSerialization recurses once per level, and a body of
        // nothing but `[` must not cost a thread's stack.
        guard !nests(json, deeperThan: maxDepth) else {
            throw RPCError(.invalidArgument, "the request nests arrays and objects deeper than \(maxDepth) levels")
        }
        // The usual request (strings, booleans, objects) without Foundation's parser.
        if let object = JSONObjectReader.object(json) {
            return try encode(object, as: try message(named: messageFullName))
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(json))
        } catch {
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw RPCError(.invalidArgument, "the request is not valid JSON: \(reason)")
        }
        guard let object = parsed as? [String: Any] else {
            throw RPCError(.invalidArgument, "the request must be a JSON object (\(messageFullName))")
        }
        return try encode(object, as: try message(named: messageFullName))
    }

    /// The deepest nesting of arrays and objects a request may have (the schema's messages nest
    /// a few levels).
    public static let maxDepth = 32

    /// Whether `json` opens more than `limit` arrays and objects inside one another (outside
    /// strings); a scan that stops at the first level past the limit.
    static func nests(_ json: [UInt8], deeperThan limit: Int) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in json {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }

    /// `encode(json:as:)` for JSON text.
    public static func encode(json: String, as messageFullName: String) throws(RPCError) -> [UInt8] {
        try encode(json: Array(json.utf8), as: messageFullName)
    }

    /// Which fields at their default value the JSON writes.
    public enum Defaults: Sendable {
        /// None: proto3 JSON's usual output.
        case omitted
        /// `false` for a bool field and `[]` for a repeated one, so that a reader may index them
        /// in every answer (`proto/` has no map fields, and the schema table none to describe);
        /// other defaults (0, "", an enum's zero value, an absent message) and `optional` fields
        /// are still left out. proto3 JSON allows it, and a parser takes either form.
        case boolsAndLists
    }

    /// The proto3 JSON of `bytes`, decoded as the message `messageFullName`: indented by two
    /// spaces when `pretty`, else on one line, with the fields at their default value that
    /// `defaults` says, in this message and every message in it.
    ///
    /// Throws `dataLoss` saying why when the bytes are not such a message, `notFound` when
    /// there is no such message.
    public static func decodeToJSON(
        _ bytes: [UInt8], as messageFullName: String, pretty: Bool, defaults: Defaults = .omitted
    ) throws(RPCError) -> String {
        String(
            decoding: try decodeToJSONBytes(bytes, as: messageFullName, pretty: pretty, defaults: defaults),
            as: UTF8.self)
    }

    /// `decodeToJSON`'s JSON as UTF-8 bytes, for a body to send, without a `String` between.
    public static func decodeToJSONBytes(
        _ bytes: [UInt8], as messageFullName: String, pretty: Bool, defaults: Defaults = .omitted
    ) throws(RPCError) -> [UInt8] {
        let message = try message(named: messageFullName)
        let layout = JSONLayout(pretty: pretty, defaults: defaults)
        var json: [UInt8] = []
        json.reserveCapacity(256 + bytes.count * 2)
        let written = bytes.withUnsafeBytes { layout.write($0, message, depth: 0, to: &json) }
        guard written else {
            let reason = bytes.withUnsafeBytes { ProtoWireReader.firstProblem(in: $0) }
            throw RPCError(
                .dataLoss,
                "the answer is not a valid \(messageFullName): \(reason ?? "a field has a value of the wrong type")")
        }
        return json
    }

    /// The schema of the message `fullName`; throws `notFound` when `proto/` has none.
    static func message(named fullName: String) throws(RPCError) -> ProtoSchema.Message {
        guard let message = ProtoSchema.messages[fullName] else {
            throw RPCError(.notFound, "no message \(fullName)")
        }
        return message
    }
}
