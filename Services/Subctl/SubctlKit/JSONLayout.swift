internal import CProto
internal import CProtobufC
import Foundation
import Observability

/// Writes an unpacked protobuf-c message as proto3 JSON: JSON names, fields in field-number
/// order, defaults left out, 64-bit integers as strings, enums by name, bytes as base64.
/// Indents by two spaces when `pretty`, else writes one line.
struct JSONLayout {
    let pretty: Bool

    /// The JSON object of `message`, laid out for nesting level `depth`.
    func message(_ message: UnsafePointer<ProtobufCMessage>, depth: Int) -> String {
        let base = UnsafeRawPointer(message)
        var members: [(String, String)] = []
        for field in DescriptorRegistry.fields(of: message.pointee.descriptor) {
            if field.flags & PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue != 0,
                base.load(fromByteOffset: Int(field.quantifier_offset), as: UInt32.self) != field.id
            {
                continue
            }
            let key = DescriptorRegistry.jsonName(String(cString: field.name))
            let member = base + Int(field.offset)
            switch field.label {
            case PROTOBUF_C_LABEL_REPEATED:
                let count = base.load(fromByteOffset: Int(field.quantifier_offset), as: Int.self)
                guard count > 0, let elements = member.load(as: UnsafeRawPointer?.self) else { continue }
                let size = DynamicMessage.elementSize(field.type)
                let items = (0..<count).map { value(at: elements + $0 * size, field, depth: depth + 2) }
                members.append((key, array(items, depth: depth + 1)))
            case PROTOBUF_C_LABEL_OPTIONAL
            where field.type != PROTOBUF_C_TYPE_MESSAGE && field.type != PROTOBUF_C_TYPE_STRING:
                guard base.load(fromByteOffset: Int(field.quantifier_offset), as: Int32.self) != 0 else { continue }
                members.append((key, value(at: member, field, depth: depth + 1)))
            default:
                guard !isDefault(member, field) else { continue }
                members.append((key, value(at: member, field, depth: depth + 1)))
            }
        }
        guard !members.isEmpty else { return "{}" }
        let entries = members.map { "\(Self.quote($0.0)):\(pretty ? " " : "")\($0.1)" }
        return enclose(entries, "{", "}", depth: depth)
    }

    private func array(_ items: [String], depth: Int) -> String { enclose(items, "[", "]", depth: depth) }

    private func enclose(_ entries: [String], _ open: String, _ close: String, depth: Int) -> String {
        guard pretty else { return open + entries.joined(separator: ",") + close }
        let inner = String(repeating: "  ", count: depth + 1)
        let outer = String(repeating: "  ", count: depth)
        return open + "\n" + entries.map { inner + $0 }.joined(separator: ",\n") + "\n" + outer + close
    }

    /// True for proto3's defaults, which JSON leaves out: zero, false, empty, absent.
    private func isDefault(_ member: UnsafeRawPointer, _ field: ProtobufCFieldDescriptor) -> Bool {
        switch field.type {
        case PROTOBUF_C_TYPE_FLOAT: member.load(as: Float.self) == 0
        case PROTOBUF_C_TYPE_DOUBLE: member.load(as: Double.self) == 0
        case PROTOBUF_C_TYPE_STRING: member.load(as: UnsafePointer<CChar>?.self).map { $0.pointee == 0 } ?? true
        case PROTOBUF_C_TYPE_BYTES: member.load(as: ProtobufCBinaryData.self).len == 0
        case PROTOBUF_C_TYPE_MESSAGE: member.load(as: UnsafeRawPointer?.self) == nil
        default:
            DynamicMessage.elementSize(field.type) == 8
                ? member.load(as: UInt64.self) == 0 : member.load(as: UInt32.self) == 0
        }
    }

    /// One value of `field` stored at `member`.
    private func value(at member: UnsafeRawPointer, _ field: ProtobufCFieldDescriptor, depth: Int) -> String {
        switch field.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            return String(member.load(as: Int32.self))
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            return String(member.load(as: UInt32.self))
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            return "\"\(member.load(as: Int64.self))\""
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            return "\"\(member.load(as: UInt64.self))\""
        case PROTOBUF_C_TYPE_FLOAT:
            return Self.number(member.load(as: Float.self))
        case PROTOBUF_C_TYPE_DOUBLE:
            return Self.number(member.load(as: Double.self))
        case PROTOBUF_C_TYPE_BOOL:
            return member.load(as: Int32.self) != 0 ? "true" : "false"
        case PROTOBUF_C_TYPE_ENUM:
            let number = member.load(as: Int32.self)
            let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
            guard let known = protobuf_c_enum_descriptor_get_value(descriptor, number) else { return String(number) }
            return Self.quote(String(cString: known.pointee.name))
        case PROTOBUF_C_TYPE_STRING:
            return Self.quote(member.load(as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? "")
        case PROTOBUF_C_TYPE_BYTES:
            let bytes = member.load(as: ProtobufCBinaryData.self)
            return "\"\(Data(UnsafeRawBufferPointer(start: bytes.data, count: bytes.len)).base64EncodedString())\""
        case PROTOBUF_C_TYPE_MESSAGE:
            guard let message = member.load(as: UnsafePointer<ProtobufCMessage>?.self) else { return "{}" }
            return self.message(message, depth: depth)
        default:
            return "null"
        }
    }

    private static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> String {
        if value.isNaN { return "\"NaN\"" }
        if value.isInfinite { return value < 0 ? "\"-Infinity\"" : "\"Infinity\"" }
        return value.description
    }

    /// `text` as a JSON string literal.
    static func quote(_ text: String) -> String {
        var result = ""
        JSONText.appendString(text, to: &result)
        return result
    }
}
