/// Reads the protobuf wire format: just enough to decode a descriptor set.
struct ProtoReader {
    enum Value {
        case varint(UInt64)
        case bytes(ArraySlice<UInt8>)
        case fixed
    }

    private let bytes: ArraySlice<UInt8>
    private var offset: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    /// The next field's number and value, or nil at the end.
    mutating func next() throws(GeneratorError) -> (number: Int, value: Value)? {
        guard offset < bytes.endIndex else { return nil }
        let tag = try varint()
        let number = Int(tag >> 3)
        switch tag & 7 {
        case 0: return (number, .varint(try varint()))
        case 1: return (number, try skip(8))
        case 2:
            let length = Int(try varint())
            guard length <= bytes.endIndex - offset else {
                throw GeneratorError("descriptor set: truncated field \(number)")
            }
            defer { offset += length }
            return (number, .bytes(bytes[offset..<offset + length]))
        case 5: return (number, try skip(4))
        default: throw GeneratorError("descriptor set: unsupported wire type \(tag & 7) for field \(number)")
        }
    }

    private mutating func skip(_ count: Int) throws(GeneratorError) -> Value {
        guard count <= bytes.endIndex - offset else { throw GeneratorError("descriptor set: truncated fixed field") }
        offset += count
        return .fixed
    }

    private mutating func varint() throws(GeneratorError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.endIndex, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        throw GeneratorError("descriptor set: truncated varint")
    }
}

extension ProtoReader.Value {
    var string: String {
        if case .bytes(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
        return ""
    }

    var integer: Int {
        if case .varint(let value) = self { return Int(truncatingIfNeeded: value) }
        return 0
    }

    var bool: Bool { integer != 0 }

    var message: ArraySlice<UInt8> {
        if case .bytes(let bytes) = self { return bytes }
        return []
    }

    /// A repeated int32 field's elements: packed (one length-delimited value) or one varint.
    var integers: [Int] {
        switch self {
        case .varint(let value): return [Int(truncatingIfNeeded: value)]
        case .bytes(let bytes):
            var values: [Int] = []
            var current: UInt64 = 0
            var shift: UInt64 = 0
            for byte in bytes {
                current |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 {
                    values.append(Int(truncatingIfNeeded: current))
                    current = 0
                    shift = 0
                } else {
                    shift += 7
                }
            }
            return values
        case .fixed: return []
        }
    }
}

/// A failure that stops generation, with what was wrong.
struct GeneratorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
