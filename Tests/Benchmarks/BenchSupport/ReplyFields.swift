/// What the load generator checks in a reply envelope, read straight from its protobuf bytes:
/// call_id (field 1, varint), kind (field 2, varint), where the payload (field 5) lies and
/// whether a status (field 6) is present. The server writes a status only when the call failed,
/// so its presence marks an error.
struct ReplyFields {
    private(set) var callID: UInt64 = 0
    private(set) var kind: UInt64 = 0
    private(set) var hasStatus = false
    /// The payload's bytes within the frame (empty when the envelope carries none).
    private(set) var payload: Range<Int> = 0..<0

    /// Nil when `frame` is not well-formed protobuf.
    init?(_ frame: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < frame.count {
            guard let tag = Self.varint(frame, &offset) else { return nil }
            let field = tag >> 3
            switch tag & 7 {
            case 0:
                guard let value = Self.varint(frame, &offset) else { return nil }
                if field == 1 { callID = value } else if field == 2 { kind = value }
            case 1: offset += 8
            case 2:
                guard let length = Self.varint(frame, &offset), length <= UInt64(frame.count - offset) else {
                    return nil
                }
                if field == 5 { payload = offset..<(offset + Int(length)) }
                offset += Int(length)
                if field == 6 { hasStatus = true }
            case 5: offset += 4
            default: return nil
            }
        }
        guard offset == frame.count else { return nil }
    }

    private static func varint(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count && shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
