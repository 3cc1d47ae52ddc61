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
/// Written as UTF-8 into one buffer (an answer's or a webhook's JSON on a hot path).
struct JSONLayout {
    let pretty: Bool
    var defaults: ProtoJSON.Defaults = .omitted

    /// Appends the JSON object of `bytes` read as `message`, laid out for nesting level `depth`,
    /// to `output`; false (with `output` holding part of it) when the bytes are not such a
    /// message (malformed, or a field of the wrong wire type).
    func write(_ bytes: UnsafeRawBufferPointer, _ message: ProtoSchema.Message, depth: Int, to output: inout [UInt8])
        -> Bool
    {
        // Each occurrence in field-number order (as protobuf-c writes them), stably sorted when
        // they came otherwise, so a field's occurrences stay in the order they came.
        var occurrences: [(number: Int, value: ProtoWireReader.Value)] = []
        var sorted = true
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            if let last = occurrences.last, last.number > Int(field.number) { sorted = false }
            occurrences.append((Int(field.number), field.value))
        }
        guard !reader.isMalformed else { return false }
        if !sorted {
            occurrences = occurrences.enumerated().sorted {
                ($0.element.number, $0.offset) < ($1.element.number, $1.offset)
            }.map(\.element)
        }
        output.append(UInt8(ascii: "{"))
        var members = 0
        var cursor = 0
        for field in message.fields {
            while cursor < occurrences.count, occurrences[cursor].number < field.number { cursor += 1 }
            let first = cursor
            while cursor < occurrences.count, occurrences[cursor].number == field.number { cursor += 1 }
            let found = occurrences[first..<cursor]
            guard !found.isEmpty else {
                if let shown = defaultShown(field) { member(field, &members, depth, &output, shown) }
                continue
            }
            if field.isRepeated {
                let start = output.count
                member(field, &members, depth, &output)
                output.append(UInt8(ascii: "["))
                var items = 0
                for occurrence in found {
                    if field.isPackable, case .bytes(let run) = occurrence.value {
                        var value: UInt64 = 0
                        var shift: UInt64 = 0
                        for byte in run {
                            guard shift < 64 else { return false }
                            value |= UInt64(byte & 0x7F) << shift
                            shift += 7
                            if byte & 0x80 == 0 {
                                item(&items, depth + 1, &output)
                                guard scalar(value, field, to: &output) else { return false }
                                value = 0
                                shift = 0
                            }
                        }
                        guard shift == 0 else { return false }
                        continue
                    }
                    item(&items, depth + 1, &output)
                    guard
                        self.value(
                            found[found.startIndex..<found.startIndex], occurrence.value, field, depth: depth + 2,
                            to: &output)
                    else { return false }
                }
                if items > 0 {
                    close(UInt8(ascii: "]"), items, depth + 1, &output)
                } else {
                    output.removeSubrange(start...)
                    members -= 1
                    if let shown = defaultShown(field) { member(field, &members, depth, &output, shown) }
                }
                continue
            }
            // A message's occurrences merge; a scalar's last one stands, left out when it is the
            // default (zero, false, empty).
            let last = found.last!.value
            if case .message = field.type {
                member(field, &members, depth, &output)
                guard value(found, last, field, depth: depth + 1, to: &output) else { return false }
            } else if !Self.isDefault(last) {
                member(field, &members, depth, &output)
                guard value(found[found.startIndex..<found.startIndex], last, field, depth: depth + 1, to: &output)
                else { return false }
            } else {
                // Checked as written when present: a wrong wire type refuses the message.
                var unused: [UInt8] = []
                guard value(found[found.startIndex..<found.startIndex], last, field, depth: depth + 1, to: &unused)
                else { return false }
                if let shown = defaultShown(field) { member(field, &members, depth, &output, shown) }
            }
        }
        close(UInt8(ascii: "}"), members, depth, &output)
        return true
    }

    /// Starts a member of an object at `depth`: the separator, the indent, the name; then `shown`
    /// as its value when given.
    private func member(
        _ field: ProtoSchema.Field, _ members: inout Int, _ depth: Int, _ output: inout [UInt8],
        _ shown: StaticString? = nil
    ) {
        item(&members, depth, &output)
        Self.appendQuoted(field.jsonName, to: &output)
        output.append(UInt8(ascii: ":"))
        if pretty { output.append(UInt8(ascii: " ")) }
        if let shown {
            output.append(contentsOf: UnsafeRawBufferPointer(start: shown.utf8Start, count: shown.utf8CodeUnitCount))
        }
    }

    /// Starts an entry of an object or list at `depth`: the separator before all but the first,
    /// and when pretty a new line and the indent.
    private func item(_ count: inout Int, _ depth: Int, _ output: inout [UInt8]) {
        if count > 0 { output.append(UInt8(ascii: ",")) }
        count += 1
        guard pretty else { return }
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * (depth + 1)))
    }

    /// Ends an object or list of `count` entries at `depth`.
    private func close(_ bracket: UInt8, _ count: Int, _ depth: Int, _ output: inout [UInt8]) {
        if pretty, count > 0 {
            output.append(UInt8(ascii: "\n"))
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
        }
        output.append(bracket)
    }

    /// What `defaults` writes for `field` at its default value: nil when it is left out.
    private func defaultShown(_ field: ProtoSchema.Field) -> StaticString? {
        guard defaults == .boolsAndLists, !field.isOptional else { return nil }
        if field.isRepeated { return "[]" }
        return field.type == .bool ? "false" : nil
    }

    /// proto3's defaults, which JSON leaves out: zero, false, empty.
    private static func isDefault(_ value: ProtoWireReader.Value) -> Bool {
        switch value {
        case .varint(let number): number == 0
        case .bytes(let contents): contents.isEmpty
        case .fixed: false
        }
    }

    /// Appends the JSON of a field's value: `last` (a scalar's value, or a message's only
    /// occurrence), or the merge of `occurrences` for a message that has more than one; false
    /// for a wire type the field cannot have.
    private func value(
        _ occurrences: ArraySlice<(number: Int, value: ProtoWireReader.Value)>, _ last: ProtoWireReader.Value,
        _ field: ProtoSchema.Field, depth: Int, to output: inout [UInt8]
    ) -> Bool {
        switch field.type {
        case .message(let name):
            guard let schema = ProtoSchema.messages[name] else { return false }
            if occurrences.count <= 1 {
                guard case .bytes(let contents) = last else { return false }
                return write(contents, schema, depth: depth, to: &output)
            }
            var merged: [UInt8] = []
            for occurrence in occurrences {
                guard case .bytes(let contents) = occurrence.value else { return false }
                merged += contents
            }
            return merged.withUnsafeBytes { write($0, schema, depth: depth, to: &output) }
        case .string:
            guard case .bytes(let contents) = last else { return false }
            Self.appendQuoted(contents, to: &output)
            return true
        case .bytes:
            guard case .bytes(let contents) = last else { return false }
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: Data(contents).base64EncodedString().utf8)
            output.append(UInt8(ascii: "\""))
            return true
        default:
            guard case .varint(let number) = last else { return false }
            return scalar(number, field, to: &output)
        }
    }

    /// Appends a varint of a number, boolean or enum field as JSON; false for another type.
    private func scalar(_ number: UInt64, _ field: ProtoSchema.Field, to output: inout [UInt8]) -> Bool {
        switch field.type {
        case .int32: Self.appendDecimal(Int64(Int32(truncatingIfNeeded: number)), to: &output)
        case .uint32: Self.appendDecimal(Int64(UInt32(truncatingIfNeeded: number)), to: &output)
        case .int64:
            output.append(UInt8(ascii: "\""))
            Self.appendDecimal(Int64(bitPattern: number), to: &output)
            output.append(UInt8(ascii: "\""))
        case .uint64:
            output.append(UInt8(ascii: "\""))
            Self.appendDecimal(number, to: &output)
            output.append(UInt8(ascii: "\""))
        case .bool: output.append(contentsOf: (number != 0 ? "true" : "false").utf8)
        case .enumeration(let name):
            let value = Int32(truncatingIfNeeded: number)
            if let known = ProtoSchema.enums[name]?.values.first(where: { $0.number == value }) {
                Self.appendQuoted(known.name, to: &output)
            } else {
                Self.appendDecimal(Int64(value), to: &output)
            }
        default: return false
        }
        return true
    }

    /// `text` as a JSON string literal.
    static func quote(_ text: String) -> String {
        var output: [UInt8] = []
        appendQuoted(text, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `text` as a JSON string literal.
    static func appendQuoted(_ text: String, to output: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendQuoted(UnsafeRawBufferPointer($0), to: &output) }
    }

    /// Appends UTF-8 `bytes` as a JSON string literal (ill-formed sequences as U+FFFD, as
    /// `String(decoding:as:)` reads them).
    static func appendQuoted(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        // Most text (names, ids) is ASCII that needs no escape: copied whole.
        if !bytes.contains(where: { $0 < 0x20 || $0 >= 0x80 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: bytes)
            output.append(UInt8(ascii: "\""))
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: text.utf8)
            output.append(UInt8(ascii: "\""))
            return
        }
        var escaped = ""
        JSONText.appendString(text, to: &escaped)
        output.append(contentsOf: escaped.utf8)
    }

    /// Appends `value` in decimal.
    static func appendDecimal(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude, to: &output)
    }

    /// Appends `value` in decimal.
    static func appendDecimal(_ value: UInt64, to output: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            output.append(contentsOf: buffer[(24 - count)...])
        }
    }
}
