import Wire

/// What the load generator checks in a reply envelope, read straight from its protobuf bytes:
/// call_id (field 1, varint), kind (field 2, varint), where the payload (field 5) lies and
/// whether a status (field 6) is present. The server writes a status only when the call failed,
/// so its presence marks an error.
struct ReplyFields {
    private(set) var callID: UInt64 = 0
    private(set) var kind: UInt64 = 0
    private(set) var hasStatus = false
    /// The payload's bytes within the frame (empty when the envelope carries none).
    private(set) var payload = UnsafeRawBufferPointer(start: nil, count: 0)

    /// Nil when `frame` is not well-formed protobuf.
    init?(_ frame: UnsafeRawBufferPointer) {
        var reader = ProtoWireReader(frame)
        while let (number, value) = reader.next() {
            switch number {
            case 1: callID = value.varint ?? callID
            case 2: kind = value.varint ?? kind
            case 5: payload = value.contents ?? payload
            case 6: hasStatus = hasStatus || value.contents != nil
            default: break
            }
        }
        if reader.isMalformed { return nil }
    }
}
