/// Field conversions shared by every message: protobuf-c's representation on one side, the
/// Swift types' on the other. Proto3 has no presence for scalars, so the zero value stands for
/// absent: 0 ⇄ `nil` for times, positions and enums, the empty string ⇄ `nil` for optional strings.
enum ProtoField {
    // MARK: Reading an unpacked struct

    /// The string, or "" for NULL (protobuf-c never leaves a string NULL, but a filled struct may).
    /// Throws for bytes that are not UTF-8: proto3 requires it, protobuf-c does not check it, and
    /// repairing would let two different store ids read as the same string.
    static func string(_ pointer: UnsafePointer<CChar>?, _ field: String) throws(ProtoFieldError) -> String {
        try optionalString(pointer, field) ?? ""
    }

    /// The string, or nil when NULL or empty (without allocating). Throws like `string`.
    static func optionalString(_ pointer: UnsafePointer<CChar>?, _ field: String) throws(ProtoFieldError) -> String? {
        guard let pointer, pointer.pointee != 0 else { return nil }
        guard let text = String(validatingCString: pointer) else { throw ProtoFieldError(field, "is not valid UTF-8") }
        return text
    }

    /// The elements of a repeated string field; each must be UTF-8.
    static func strings(
        _ elements: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, count: Int, _ field: String
    ) throws(ProtoFieldError) -> [String] {
        guard let elements, count > 0 else { return [] }
        var values: [String] = []
        values.reserveCapacity(count)
        for index in 0..<count { values.append(try string(elements[index], "\(field)[\(index)]")) }
        return values
    }

    /// The value, or nil for 0.
    static func nonZero<T: BinaryInteger>(_ value: T) -> T? { value == 0 ? nil : value }

    /// The enum value for wire number `raw` (a C enum's raw value), or nil for 0 (unspecified).
    /// Open enums (with an `unknown` case) take every number; a closed enum throws for a
    /// number it does not know.
    static func enumValue<E: RawRepresentable>(_ raw: UInt32, _ field: String) throws(ProtoFieldError) -> E?
    where E.RawValue == Int32 {
        let number = Int32(bitPattern: raw)
        if number == 0 { return nil }
        guard let value = E(rawValue: number) else { throw ProtoFieldError(field, "has unknown value \(number)") }
        return value
    }

    /// Like `enumValue`, for a field that must not be unspecified.
    static func requiredEnum<E: RawRepresentable>(_ raw: UInt32, _ field: String) throws(ProtoFieldError) -> E
    where E.RawValue == Int32 {
        guard let value: E = try enumValue(raw, field) else { throw ProtoFieldError(field, "is unspecified") }
        return value
    }

    /// The converted sub-message, or nil when absent (NULL).
    static func message<T: CMessageConvertible>(_ pointer: UnsafeMutablePointer<T.CMessage>?, _ field: String)
        throws(ProtoFieldError) -> T?
    {
        guard let pointer else { return nil }
        do { return try T(pointer) } catch { throw error.nested(in: field) }
    }

    /// The converted sub-message; throws when absent.
    static func requiredMessage<T: CMessageConvertible>(
        _ pointer: UnsafeMutablePointer<T.CMessage>?, _ field: String
    ) throws(ProtoFieldError) -> T {
        guard let value: T = try message(pointer, field) else { throw ProtoFieldError(field, "is missing") }
        return value
    }

    /// The converted elements of a repeated message field.
    static func messages<T: CMessageConvertible>(
        _ elements: UnsafeMutablePointer<UnsafeMutablePointer<T.CMessage>?>?, count: Int, _ field: String
    ) throws(ProtoFieldError) -> [T] {
        guard let elements, count > 0 else { return [] }
        var values: [T] = []
        values.reserveCapacity(count)
        for index in 0..<count {
            // protobuf-c never stores NULL elements; a NULL would be a broken struct.
            guard let element = elements[index] else { throw ProtoFieldError("\(field)[\(index)]", "is NULL") }
            do { values.append(try T(element)) } catch { throw error.nested(in: field, index: index) }
        }
        return values
    }

    // MARK: Filling a struct

    /// The wire number for a C enum field: the value's raw value, 0 for nil.
    static func number<E: RawRepresentable>(_ value: E?) -> UInt32 where E.RawValue == Int32 {
        UInt32(bitPattern: value?.rawValue ?? 0)
    }
}
