/// The fields of a serialized message one at a time, read in place without a schema: for the
/// paths that read a few fields of many messages (the entitlement view's snapshot, the envelope
/// of a frame), where unpacking each whole message would cost more than the use, and to say
/// where and why bytes protobuf-c refused stop being a message. `next` stops, setting `problem`,
/// at the first thing that is not well-formed protobuf.
public struct ProtoWireReader {
    /// A field's value as the wire has it.
    public enum Value {
        case varint(UInt64)
        /// A fixed-width value (wire types 1 and 5), skipped.
        case fixed
        case bytes(UnsafeRawBufferPointer)

        /// The value of a varint field, nil for the other wire types.
        @inlinable public var varint: UInt64? {
            if case .varint(let value) = self { value } else { nil }
        }

        /// The contents of a length-delimited field, nil for the other wire types.
        @inlinable public var contents: UnsafeRawBufferPointer? {
            if case .bytes(let contents) = self { contents } else { nil }
        }
    }

    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline var offset = 0
    /// What stopped the reading and where, once it stopped at malformed bytes.
    public private(set) var problem: String?
    public var isMalformed: Bool { problem != nil }

    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The first structural problem in `bytes`, or nil when the framing looks valid (a refusal
    /// then came from a field's contents, such as a string that is not UTF-8).
    public static func firstProblem(in bytes: UnsafeRawBufferPointer) -> String? {
        var reader = ProtoWireReader(bytes)
        while reader.next() != nil {}
        return reader.problem
    }

    /// The contents of the last occurrence of length-delimited field `number` in `bytes` (the one
    /// a decoder keeps), or nil when the field is absent or the bytes are not well-formed.
    public static func lastLengthDelimited(_ number: UInt64, in bytes: UnsafeRawBufferPointer)
        -> UnsafeRawBufferPointer?
    {
        var reader = ProtoWireReader(bytes)
        var found: UnsafeRawBufferPointer?
        while let field = reader.next() {
            if field.number == number { found = field.value.contents ?? found }
        }
        return reader.isMalformed ? nil : found
    }

    /// The next field (its number and value), or nil after the last one or at malformed bytes.
    @inlinable
    public mutating func next() -> (number: UInt64, value: Value)? {
        guard offset < bytes.count, problem == nil else { return nil }
        let start = offset
        guard let key = readVarint() else { return malformed("truncated field key at byte \(start)") }
        let number = key >> 3
        guard number != 0 else { return malformed("field number 0 at byte \(start)") }
        switch key & 7 {
        case 0:
            guard let value = readVarint() else {
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
            guard let length = readVarint() else {
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

    @inlinable @inline(__always)
    mutating func readVarint() -> UInt64? {
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
    /// A writer with room for `capacity` bytes before it grows.
    public init(capacity: Int) { bytes.reserveCapacity(capacity) }

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

    /// A length-delimited field from bytes in place.
    public mutating func field(_ number: Int, bytes contents: UnsafeRawBufferPointer) {
        key(number, wireType: 2)
        varint(UInt64(contents.count))
        bytes.append(contentsOf: contents)
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
