import Foundation
import Wire

/// JSON → protobuf bytes, written field by field as the schema describes them.
extension ProtoJSON {
    /// The bytes of `message` with the fields of a JSON object.
    static func encode(_ object: [String: Any], as message: ProtoSchema.Message) throws(RPCError) -> [UInt8] {
        var given: [Int: (key: String, value: Any)] = [:]
        for key in object.keys.sorted() {
            guard let field = message.fields.first(where: { $0.name == key || $0.jsonName == key }) else {
                throw RPCError(.invalidArgument, "\(message.fullName) has no field \"\(key)\"")
            }
            if let earlier = given[field.number] {
                throw RPCError(
                    .invalidArgument,
                    "\(message.fullName).\(field.name) is given twice, as \"\(earlier.key)\" and \"\(key)\"")
            }
            given[field.number] = (key, object[key]!)
        }
        var out = ProtoWireWriter()
        for field in message.fields {
            guard let value = given[field.number]?.value, !(value is NSNull) else { continue }
            let path = "\(message.fullName).\(field.name)"
            if field.isRepeated {
                guard let array = value as? [Any] else { throw mismatch(path, "an array", value) }
                if field.isPackable {
                    // proto3 packs repeated numbers, as protoc-c's code does.
                    guard !array.isEmpty else { continue }
                    var packed = ProtoWireWriter()
                    for (index, element) in array.enumerated() {
                        try write(element, field, into: &packed, path: "\(path)[\(index)]", number: nil)
                    }
                    out.field(field.number, bytes: packed.bytes)
                } else {
                    for (index, element) in array.enumerated() {
                        try write(element, field, into: &out, path: "\(path)[\(index)]", number: field.number)
                    }
                }
            } else {
                try write(value, field, into: &out, path: path, number: field.number, omitDefault: true)
            }
        }
        return out.bytes
    }

    /// Writes one value of `field`, tagged with `number` (untagged inside a packed run); a
    /// singular field's zero value is not written (`omitDefault`).
    private static func write(
        _ value: Any, _ field: ProtoSchema.Field, into out: inout ProtoWireWriter, path: String, number: Int?,
        omitDefault: Bool = false
    ) throws(RPCError) {
        func varint(_ raw: UInt64) {
            guard !(omitDefault && raw == 0) else { return }
            if let number { out.key(number, wireType: 0) }
            out.varint(raw)
        }
        switch field.type {
        case .int32: varint(UInt64(bitPattern: Int64(try integer(value, Int32.self, "int32", path))))
        case .int64: varint(UInt64(bitPattern: try integer(value, Int64.self, "int64", path)))
        case .uint32: varint(UInt64(try integer(value, UInt32.self, "uint32", path)))
        case .uint64: varint(try integer(value, UInt64.self, "uint64", path))
        case .bool:
            guard let flag = value as? NSNumber, isBoolean(flag) else { throw mismatch(path, "true or false", value) }
            varint(flag.boolValue ? 1 : 0)
        case .enumeration(let name):
            varint(UInt64(bitPattern: Int64(try enumNumber(value, name, path))))
        case .string:
            guard let text = value as? String else { throw mismatch(path, "a string", value) }
            guard !text.utf8.contains(0) else {
                throw RPCError(.invalidArgument, "\(path): a string cannot contain U+0000")
            }
            guard !(omitDefault && text.isEmpty) else { return }
            out.field(number!, bytes: Array(text.utf8))
        case .bytes:
            guard let text = value as? String, let data = base64Data(text) else {
                throw mismatch(path, "base64 text", value)
            }
            guard !(omitDefault && data.isEmpty) else { return }
            out.field(number!, bytes: [UInt8](data))
        case .message(let name):
            guard let object = value as? [String: Any] else { throw mismatch(path, "an object (\(name))", value) }
            // A sub-message given, even empty, is sent: its presence is what it says.
            out.field(number!, bytes: try encode(object, as: try message(named: name)))
        }
    }

    /// An integer from a JSON number or a decimal string, within `T`'s range.
    private static func integer<T: FixedWidthInteger>(
        _ value: Any, _ type: T.Type, _ typeName: String, _ path: String
    ) throws(RPCError) -> T {
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
                    throw RPCError(
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
            throw RPCError(.invalidArgument, "\(path): \(text) is out of range for \(typeName)")
        }
        throw mismatch(path, "an integer (\(typeName))", value)
    }

    /// An enum value by name, or any int32 number (proto3 enums are open).
    private static func enumNumber(_ value: Any, _ enumName: String, _ path: String) throws(RPCError) -> Int32 {
        let values = ProtoSchema.enums[enumName]?.values ?? []
        if let name = value as? String {
            guard let known = values.first(where: { $0.name == name }) else {
                throw RPCError(.invalidArgument, "\(path): \"\(name)\" is not a value of \(enumName)")
            }
            return known.number
        }
        guard let number = value as? NSNumber, !isBoolean(number) else {
            throw mismatch(path, "a value name or number of \(enumName)", value)
        }
        return try integer(number, Int32.self, enumName, path)
    }

    /// Standard or URL-safe base64, with or without padding.
    private static func base64Data(_ text: String) -> Data? {
        var normalized = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if normalized.count % 4 != 0 { normalized += String(repeating: "=", count: 4 - normalized.count % 4) }
        return Data(base64Encoded: normalized)
    }

    /// JSONSerialization gives booleans as NSNumber of ObjC type `c`; it uses `c` for nothing else.
    private static func isBoolean(_ number: NSNumber) -> Bool { String(cString: number.objCType) == "c" }

    private static func mismatch(_ path: String, _ expected: String, _ value: Any) -> RPCError {
        RPCError(.invalidArgument, "\(path): expected \(expected), got \(describe(value))")
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

extension ProtoSchema.Field {
    /// A repeated field of numbers, booleans or enums: proto3 packs it.
    var isPackable: Bool {
        switch type {
        case .string, .bytes, .message: false
        default: true
        }
    }
}
