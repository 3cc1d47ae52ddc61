internal import CProto
internal import CProtobufC
import Foundation

/// JSON → C message. Every pointer stored into a message is malloc'd (strdup, calloc, malloc)
/// and owned by that message, so one `protobuf_c_message_free_unpacked(root, nil)` frees it
/// all, also when a later field throws. Empty singular strings and bytes are not stored: the
/// generated init's defaults (`protobuf_c_empty_string`, NULL) stay, which free_unpacked skips.
extension DynamicMessage {
    /// Sets the fields of the freshly initialized `message` from a JSON object.
    static func fill(_ message: UnsafeMutablePointer<ProtobufCMessage>, from object: [String: Any]) throws(SubctlError)
    {
        let descriptor = message.pointee.descriptor!
        let messageName = String(cString: descriptor.pointee.name)
        let fields = DescriptorRegistry.fields(of: descriptor)
        let base = UnsafeMutableRawPointer(message)
        var given: [UInt32: String] = [:]
        for key in object.keys.sorted() {
            guard
                let field = fields.first(where: {
                    let name = String(cString: $0.name)
                    return name == key || DescriptorRegistry.jsonName(name) == key
                })
            else {
                throw SubctlError(.invalidArgument, "\(messageName) has no field \"\(key)\"")
            }
            let path = "\(messageName).\(String(cString: field.name))"
            if let earlier = given[field.id] {
                throw SubctlError(.invalidArgument, "\(path) is given twice, as \"\(earlier)\" and \"\(key)\"")
            }
            given[field.id] = key
            let value = object[key]!
            if value is NSNull { continue }
            let member = base + Int(field.offset)
            if field.label == PROTOBUF_C_LABEL_REPEATED {
                guard let array = value as? [Any] else { throw mismatch(path, "an array", value) }
                guard !array.isEmpty else { continue }
                let size = elementSize(field.type)
                guard let elements = calloc(array.count, size) else { fatalError("out of memory") }
                // Counted in full at once: the zeroed elements not yet set free as NULL.
                member.storeBytes(of: elements, as: UnsafeMutableRawPointer.self)
                (base + Int(field.quantifier_offset)).storeBytes(of: array.count, as: Int.self)
                for (index, element) in array.enumerated() {
                    _ = try store(element, field, at: elements + index * size, path: "\(path)[\(index)]", element: true)
                }
            } else {
                let stored = try store(value, field, at: member, path: path, element: false)
                if stored && field.flags & PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue != 0 {
                    (base + Int(field.quantifier_offset)).storeBytes(of: field.id, as: UInt32.self)
                } else if stored && field.label == PROTOBUF_C_LABEL_OPTIONAL {
                    (base + Int(field.quantifier_offset)).storeBytes(of: 1, as: Int32.self)
                }
            }
        }
    }

    /// Writes one value of `field` at `member`; false when it left the default in place (an
    /// empty singular string or bytes).
    private static func store(
        _ value: Any, _ field: ProtobufCFieldDescriptor, at member: UnsafeMutableRawPointer, path: String, element: Bool
    ) throws(SubctlError) -> Bool {
        switch field.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            member.storeBytes(of: try integer(value, Int32.self, field, path), as: Int32.self)
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            member.storeBytes(of: try integer(value, UInt32.self, field, path), as: UInt32.self)
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            member.storeBytes(of: try integer(value, Int64.self, field, path), as: Int64.self)
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            member.storeBytes(of: try integer(value, UInt64.self, field, path), as: UInt64.self)
        case PROTOBUF_C_TYPE_FLOAT:
            let number = try floatingPoint(value, field, path)
            guard !number.isFinite || abs(number) <= Double(Float.greatestFiniteMagnitude) else {
                throw SubctlError(.invalidArgument, "\(path): \(number) is out of range for float")
            }
            member.storeBytes(of: Float(number), as: Float.self)
        case PROTOBUF_C_TYPE_DOUBLE:
            member.storeBytes(of: try floatingPoint(value, field, path), as: Double.self)
        case PROTOBUF_C_TYPE_BOOL:
            guard let number = value as? NSNumber, isBoolean(number) else {
                throw mismatch(path, "true or false", value)
            }
            member.storeBytes(of: number.boolValue ? 1 : 0, as: Int32.self)  // protobuf_c_boolean is an int
        case PROTOBUF_C_TYPE_ENUM:
            member.storeBytes(of: try enumNumber(value, field, path), as: Int32.self)
        case PROTOBUF_C_TYPE_STRING:
            guard let text = value as? String else { throw mismatch(path, "a string", value) }
            guard !text.utf8.contains(0) else {
                throw SubctlError(.invalidArgument, "\(path): a string cannot contain U+0000")
            }
            guard element || !text.isEmpty else { return false }
            member.storeBytes(of: strdup(text)!, as: UnsafeMutablePointer<CChar>.self)
        case PROTOBUF_C_TYPE_BYTES:
            guard let text = value as? String, let data = base64Data(text) else {
                throw mismatch(path, "base64 text", value)
            }
            guard element || !data.isEmpty else { return false }
            guard let copy = malloc(max(data.count, 1)) else { fatalError("out of memory") }
            data.copyBytes(to: copy.assumingMemoryBound(to: UInt8.self), count: data.count)
            member.storeBytes(
                of: ProtobufCBinaryData(len: data.count, data: copy.assumingMemoryBound(to: UInt8.self)),
                as: ProtobufCBinaryData.self)
        case PROTOBUF_C_TYPE_MESSAGE:
            let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
            guard let object = value as? [String: Any] else {
                throw mismatch(path, "an object (\(String(cString: descriptor.pointee.name)))", value)
            }
            let message = newMessage(descriptor)
            // Owned by the parent from here on, before any field of it can throw.
            member.storeBytes(of: message, as: UnsafeMutablePointer<ProtobufCMessage>.self)
            try fill(message, from: object)
        default:
            throw SubctlError(.invalidArgument, "\(path): protobuf type \(field.type.rawValue) is not supported")
        }
        return true
    }

    /// An integer from a JSON number or a decimal string, within `T`'s range.
    private static func integer<T: FixedWidthInteger>(
        _ value: Any, _ type: T.Type, _ field: ProtobufCFieldDescriptor, _ path: String
    ) throws(SubctlError) -> T {
        let typeName = DescriptorRegistry.typeName(of: field)
        let text: String
        if let string = value as? String {
            text = string
        } else if let number = value as? NSNumber, !isBoolean(number) {
            if number is NSDecimalNumber || "fd".contains(String(cString: number.objCType)) {
                // Fractions, exponents and numbers beyond 64 bits arrive as floating point.
                let double = number.doubleValue
                guard double.isFinite, double.rounded(.towardZero) == double else {
                    throw mismatch(path, "an integer (\(typeName))", value)
                }
                guard let exact = T(exactly: double) else {
                    throw SubctlError(
                        .invalidArgument, "\(path): \(number.stringValue) is out of range for \(typeName)")
                }
                return exact
            }
            text = number.stringValue
        } else {
            throw mismatch(path, "an integer (\(typeName))", value)
        }
        if let result = T(text) { return result }
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        if !digits.isEmpty && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber) {
            throw SubctlError(.invalidArgument, "\(path): \(text) is out of range for \(typeName)")
        }
        throw mismatch(path, "an integer (\(typeName))", value)
    }

    /// A number, or one of the strings `NaN`, `Infinity`, `-Infinity` or a decimal number.
    private static func floatingPoint(
        _ value: Any, _ field: ProtobufCFieldDescriptor, _ path: String
    ) throws(SubctlError) -> Double {
        if let number = value as? NSNumber, !isBoolean(number) { return number.doubleValue }
        if let text = value as? String {
            switch text {
            case "NaN": return .nan
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            default: if let number = Double(text), number.isFinite { return number }
            }
        }
        throw mismatch(path, "a number (\(DescriptorRegistry.typeName(of: field)))", value)
    }

    /// An enum value by name, or any int32 number (proto3 enums are open).
    private static func enumNumber(
        _ value: Any, _ field: ProtobufCFieldDescriptor, _ path: String
    ) throws(SubctlError) -> Int32 {
        let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
        let enumName = String(cString: descriptor.pointee.name)
        if let name = value as? String {
            guard let known = protobuf_c_enum_descriptor_get_value_by_name(descriptor, name) else {
                throw SubctlError(.invalidArgument, "\(path): \"\(name)\" is not a value of \(enumName)")
            }
            return known.pointee.value
        }
        guard let number = value as? NSNumber, !isBoolean(number) else {
            throw mismatch(path, "a value name or number of \(enumName)", value)
        }
        return try integer(number, Int32.self, field, path)
    }

    /// Standard or URL-safe base64, with or without padding.
    private static func base64Data(_ text: String) -> Data? {
        var normalized = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if normalized.count % 4 != 0 { normalized += String(repeating: "=", count: 4 - normalized.count % 4) }
        return Data(base64Encoded: normalized)
    }

    /// JSONSerialization gives booleans as NSNumber of ObjC type `c`; it uses `c` for nothing else.
    private static func isBoolean(_ number: NSNumber) -> Bool { String(cString: number.objCType) == "c" }

    private static func mismatch(_ path: String, _ expected: String, _ value: Any) -> SubctlError {
        SubctlError(.invalidArgument, "\(path): expected \(expected), got \(describe(value))")
    }

    /// A short rendering of a JSON value for an error message.
    private static func describe(_ value: Any) -> String {
        switch value {
        case let text as String: text.count > 40 ? "a string" : JSONLayout.quote(text)
        case let number as NSNumber: isBoolean(number) ? (number.boolValue ? "true" : "false") : number.stringValue
        case is [Any]: "an array"
        case is [String: Any]: "an object"
        case is NSNull: "null"
        default: "\(type(of: value))"
        }
    }
}
