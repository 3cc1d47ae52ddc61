/// Protobuf wire format read without a schema: where and why bytes stop being a valid message
/// (after protobuf-c has refused a payload, to turn "does not parse" into a reason a caller can
/// act on), and a few fields of a message found by hand.
public enum ProtoWireScanner {
    /// The first structural problem in `bytes`, or nil when the framing looks valid (the
    /// refusal then came from a field's contents, such as a string that is not UTF-8).
    public static func firstProblem(in bytes: UnsafeRawBufferPointer) -> String? {
        var reader = ProtoWireReader(bytes)
        while reader.next() != nil {}
        return reader.problem
    }

    /// Calls `body` with each field of `bytes` in order: its number, its value when it is a
    /// varint, where its contents lie when it is length-delimited (fixed-width fields give
    /// neither). Returns false, having stopped, at the first thing that is not well-formed
    /// protobuf. For hints and for reading a reply's few fields by hand: protobuf-c decides what
    /// a message says.
    @discardableResult
    public static func forEachField<E: Error>(
        in bytes: UnsafeRawBufferPointer,
        _ body: (_ number: UInt64, _ varint: UInt64?, _ contents: Range<Int>?) throws(E) -> Void
    ) throws(E) -> Bool {
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            switch field.value {
            case .varint(let value): try body(field.number, value, nil)
            case .fixed: try body(field.number, nil, nil)
            case .bytes(let contents):
                let start =
                    contents.baseAddress.map { UnsafeRawPointer($0) - UnsafeRawPointer(bytes.baseAddress!) } ?? 0
                try body(field.number, nil, start..<(start + contents.count))
            }
        }
        return !reader.isMalformed
    }

    /// The contents of the last occurrence of length-delimited field `number` in `bytes` (the one
    /// a decoder keeps), or nil when the field is absent or the bytes are not well-formed.
    public static func lastLengthDelimited(_ number: UInt64, in bytes: UnsafeRawBufferPointer)
        -> UnsafeRawBufferPointer?
    {
        var found: Range<Int>?
        let wellFormed = forEachField(in: bytes) { field, _, contents in
            if field == number, let contents { found = contents }
        }
        guard wellFormed, let found else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[found])
    }

    @inlinable
    static func readVarint(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count && shift < 64 {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }
}

/// The fields of a serialized message one at a time, read in place: for the paths that read a
/// few fields of many messages (the entitlement view's snapshot), where unpacking each whole
/// message would cost more than the use. `next` stops, setting `isMalformed`, at the first
/// thing that is not well-formed protobuf.
public struct ProtoWireReader {
    /// A field's value as the wire has it.
    public enum Value {
        case varint(UInt64)
        /// A fixed-width value (wire types 1 and 5), skipped.
        case fixed
        case bytes(UnsafeRawBufferPointer)
    }

    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline var offset = 0
    /// What stopped the reading and where, once it stopped at malformed bytes.
    public private(set) var problem: String?
    public var isMalformed: Bool { problem != nil }

    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The next field (its number and value), or nil after the last one or at malformed bytes.
    @inlinable
    public mutating func next() -> (number: UInt64, value: Value)? {
        guard offset < bytes.count, problem == nil else { return nil }
        let start = offset
        guard let key = ProtoWireScanner.readVarint(bytes, &offset) else {
            return malformed("truncated field key at byte \(start)")
        }
        let number = key >> 3
        guard number != 0 else { return malformed("field number 0 at byte \(start)") }
        switch key & 7 {
        case 0:
            guard let value = ProtoWireScanner.readVarint(bytes, &offset) else {
                return malformed("truncated varint of field \(number) at byte \(start)")
            }
            return (number, .varint(value))
        case 1, 5:
            let size = key & 7 == 1 ? 8 : 4
            guard bytes.count - offset >= size else {
                return malformed("truncated fixed-width field \(number) at byte \(start)")
            }
            offset += size
            return (number, .fixed)
        case 2:
            guard let length = ProtoWireScanner.readVarint(bytes, &offset) else {
                return malformed("truncated length of field \(number) at byte \(start)")
            }
            let remaining = bytes.count - offset
            guard length <= UInt64(remaining) else {
                return malformed("field \(number) at byte \(start) declares \(length) bytes but \(remaining) remain")
            }
            let contents = offset
            offset += Int(length)
            return (number, .bytes(UnsafeRawBufferPointer(rebasing: bytes[contents..<offset])))
        default:
            return malformed("unsupported wire type \(key & 7) for field \(number) at byte \(start)")
        }
    }

    @usableFromInline
    mutating func malformed(_ reason: @autoclosure () -> String) -> (number: UInt64, value: Value)? {
        problem = reason()
        return nil
    }
}

/// Protobuf wire format written field by field: for the paths that write messages known only by
/// their schema (subctl's JSON requests) or pieces of one (a snapshot chunk's stored states).
public struct ProtoWireWriter {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    public mutating func key(_ number: Int, wireType: UInt64) { varint(UInt64(number) << 3 | wireType) }

    /// A varint field.
    public mutating func field(_ number: Int, varint value: UInt64) {
        key(number, wireType: 0)
        varint(value)
    }

    /// A length-delimited field.
    public mutating func field(_ number: Int, bytes contents: [UInt8]) {
        key(number, wireType: 2)
        varint(UInt64(contents.count))
        bytes += contents
    }

    /// Appends bytes as they are (already encoded fields).
    public mutating func append(raw: [UInt8]) { bytes += raw }
}
