import Foundation
import Observability
import Wire

/// Writes protobuf bytes as proto3 JSON by their schema: JSON names, fields in field-number
/// order, defaults left out, 64-bit integers as strings, enums by name, bytes as base64.
/// Indents by two spaces when `pretty`, else writes one line; writes the bools and lists at their
/// default that `defaults` asks for.
///
/// Read as protobuf reads: the last value of a singular field counts, the occurrences of a
/// sub-message merge, a repeated number may come packed or not, unknown fields are skipped.
struct JSONLayout {
    let pretty: Bool
    var defaults: ProtoJSON.Defaults = .omitted

    /// The JSON object of `bytes` read as `message`, laid out for nesting level `depth`; nil when
    /// the bytes are not such a message (malformed, or a field of the wrong wire type).
    func message(_ bytes: UnsafeRawBufferPointer, _ message: ProtoSchema.Message, depth: Int) -> String? {
        // Each field's occurrences, in order.
        var values: [Int: [ProtoWireReader.Value]] = [:]
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            values[Int(field.number), default: []].append(field.value)
        }
        guard !reader.isMalformed else { return nil }
        var members: [(String, String)] = []
        for field in message.fields {
            guard let occurrences = values[field.number] else {
                if let shown = defaultShown(field) { members.append((field.jsonName, shown)) }
                continue
            }
            if field.isRepeated {
                var items: [String] = []
                for occurrence in occurrences {
                    if field.isPackable, case .bytes(let run) = occurrence {
                        guard let numbers = Self.varints(run) else { return nil }
                        for number in numbers {
                            guard let item = scalar(number, field) else { return nil }
                            items.append(item)
                        }
                        continue
                    }
                    guard let item = value([occurrence], field, depth: depth + 2) else { return nil }
                    items.append(item)
                }
                if !items.isEmpty {
                    members.append((field.jsonName, enclose(items, "[", "]", depth: depth + 1)))
                } else if let shown = defaultShown(field) {
                    members.append((field.jsonName, shown))
                }
                continue
            }
            let isMessage: Bool
            if case .message = field.type { isMessage = true } else { isMessage = false }
            // A message's occurrences merge; a scalar's last one stands, left out when it is the
            // default (zero, false, empty).
            let last = occurrences.last!
            guard let item = value(isMessage ? occurrences : [last], field, depth: depth + 1) else { return nil }
            if isMessage || !Self.isDefault(last) {
                members.append((field.jsonName, item))
            } else if let shown = defaultShown(field) {
                members.append((field.jsonName, shown))
            }
        }
        guard !members.isEmpty else { return "{}" }
        let entries = members.map { "\(Self.quote($0.0)):\(pretty ? " " : "")\($0.1)" }
        return enclose(entries, "{", "}", depth: depth)
    }

    /// What `defaults` writes for `field` at its default value: nil when it is left out.
    private func defaultShown(_ field: ProtoSchema.Field) -> String? {
        guard defaults == .boolsAndLists, !field.isOptional else { return nil }
        if field.isRepeated { return "[]" }
        return field.type == .bool ? "false" : nil
    }

    private func enclose(_ entries: [String], _ open: String, _ close: String, depth: Int) -> String {
        guard pretty else { return open + entries.joined(separator: ",") + close }
        let inner = String(repeating: "  ", count: depth + 1)
        let outer = String(repeating: "  ", count: depth)
        return open + "\n" + entries.map { inner + $0 }.joined(separator: ",\n") + "\n" + outer + close
    }

    /// proto3's defaults, which JSON leaves out: zero, false, empty.
    private static func isDefault(_ value: ProtoWireReader.Value) -> Bool {
        switch value {
        case .varint(let number): number == 0
        case .bytes(let contents): contents.isEmpty
        case .fixed: false
        }
    }

    /// The varints of a packed run; nil when one is cut short.
    private static func varints(_ run: UnsafeRawBufferPointer) -> [UInt64]? {
        var numbers: [UInt64] = []
        var value: UInt64 = 0
        var shift: UInt64 = 0
        for byte in run {
            guard shift < 64 else { return nil }
            value |= UInt64(byte & 0x7F) << shift
            shift += 7
            if byte & 0x80 == 0 {
                numbers.append(value)
                value = 0
                shift = 0
            }
        }
        return shift == 0 ? numbers : nil
    }

    /// The JSON of a field's value from its occurrences (one, or a message's to merge); nil for
    /// a wire type the field cannot have.
    private func value(_ occurrences: [ProtoWireReader.Value], _ field: ProtoSchema.Field, depth: Int) -> String? {
        switch field.type {
        case .message(let name):
            var merged: [UInt8] = []
            for occurrence in occurrences {
                guard case .bytes(let contents) = occurrence else { return nil }
                merged += contents
            }
            guard let schema = ProtoSchema.messages[name] else { return nil }
            return merged.withUnsafeBytes { message($0, schema, depth: depth) }
        case .string:
            guard case .bytes(let contents) = occurrences[0] else { return nil }
            return Self.quote(String(decoding: contents, as: UTF8.self))
        case .bytes:
            guard case .bytes(let contents) = occurrences[0] else { return nil }
            return "\"\(Data(contents).base64EncodedString())\""
        default:
            guard case .varint(let number) = occurrences[0] else { return nil }
            return scalar(number, field)
        }
    }

    /// A varint of a number, boolean or enum field as JSON.
    private func scalar(_ number: UInt64, _ field: ProtoSchema.Field) -> String? {
        switch field.type {
        case .int32: return String(Int32(truncatingIfNeeded: number))
        case .uint32: return String(UInt32(truncatingIfNeeded: number))
        case .int64: return "\"\(Int64(bitPattern: number))\""
        case .uint64: return "\"\(number)\""
        case .bool: return number != 0 ? "true" : "false"
        case .enumeration(let name):
            let value = Int32(truncatingIfNeeded: number)
            guard let known = ProtoSchema.enums[name]?.values.first(where: { $0.number == value }) else {
                return String(value)
            }
            return Self.quote(known.name)
        default: return nil
        }
    }

    /// `text` as a JSON string literal.
    static func quote(_ text: String) -> String {
        // Most text (names, ids) needs no escape: copied whole rather than scalar by scalar.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var result = ""
        JSONText.appendString(text, to: &result)
        return result
    }
}
